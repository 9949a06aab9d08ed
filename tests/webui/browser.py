"""Headless Chromium from Debian (`chromium`, `chromium-driver`) driven by
Selenium: no browser download, no network. The browser's console is kept so
tests can require that a page logged no errors."""
import os
import shutil
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = os.environ.get("MLX_CPP_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("MLX_CPP_CHROMEDRIVER", "/usr/bin/chromedriver")


def missing_browser():
    """Why the browser cannot run here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not shutil.which(path):
            return f"{path} is missing: install Debian's chromium and chromium-driver (scripts/setup)"
    return None


class Browser:
    """One headless Chromium with its own profile (so localStorage starts
    empty) at a given window size."""

    def __init__(self, width=1280, height=860, dark=False):
        self.profile = tempfile.mkdtemp(prefix="mlx-cpp-browser-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
                         f"--window-size={width},{height}", f"--user-data-dir={self.profile}",
                         "--force-device-scale-factor=1"):
            options.add_argument(argument)
        if dark:
            options.add_argument("--force-dark-mode")
            options.add_argument("--blink-settings=preferredColorScheme=0")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_script_timeout(60)
        if width < 500:  # narrower than a desktop window can be: emulate a phone's screen
            self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": True})
        self.console = []

    def wait(self, condition, timeout=60, message=""):
        return WebDriverWait(self.driver, timeout, poll_frequency=0.05).until(
            lambda driver: condition(), message)

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def read_console(self):
        """Console entries since the last call (kept in self.console too)."""
        entries = self.driver.get_log("browser")
        self.console.extend(entries)
        return entries

    def errors(self, entries):
        return [entry for entry in entries if entry["level"] == "SEVERE"]

    def close(self):
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.close()
        return False
