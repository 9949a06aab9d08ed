"""Starts `mlx-cpp serve` on a free loopback port for end-to-end tests and
stops it with SIGTERM, checking that it exits 0. No pytest: each test
script is a plain program run by CTest; a failed check raises."""
import http.client
import json
import re
import signal
import subprocess
import sys
import threading
import time

DEFAULT_MODEL = "smollm2-135m-instruct"


def model_directory(mlx_cpp, name=DEFAULT_MODEL):
    found = subprocess.run([mlx_cpp, "models", "--path", name], capture_output=True, text=True)
    if found.returncode != 0:
        subprocess.run([mlx_cpp, "pull", name], check=True)
        found = subprocess.run([mlx_cpp, "models", "--path", name], capture_output=True,
                               text=True, check=True)
    return found.stdout.strip()


class Server:
    """A running server; `port` and `base_url` once started."""

    def __init__(self, mlx_cpp, model, *extra_args, port=0):
        self.command = [mlx_cpp, "serve", "--model", model, "--port", str(port), *extra_args]
        self.log = []
        self.process = None
        self.port = None

    def __enter__(self):
        self.process = subprocess.Popen(self.command, stderr=subprocess.PIPE, text=True)
        found = threading.Event()

        def read_log():
            for line in self.process.stderr:
                self.log.append(line.rstrip("\n"))
                match = re.search(r"listening on http://[^:]+:(\d+)", line)
                if match and not found.is_set():
                    self.port = int(match.group(1))
                    found.set()
            found.set()

        self.reader = threading.Thread(target=read_log, daemon=True)
        self.reader.start()
        if not found.wait(120) or self.port is None:
            self.stop()
            raise RuntimeError("server did not start:\n" + "\n".join(self.log))
        self.wait_healthy()
        return self

    def wait_healthy(self, timeout=300):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("server exited:\n" + "\n".join(self.log))
            try:
                status, _ = self.request("GET", "/health")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("server never became healthy")

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def request(self, method, path, body=None, headers=None, timeout=600):
        """(status, body text); body may be a dict (sent as JSON) or raw bytes/str."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if isinstance(body, dict):
                body = json.dumps(body)
            all_headers = {"Content-Type": "application/json", **(headers or {})}
            connection.request(method, path, body=body, headers=all_headers)
            response = connection.getresponse()
            return response.status, response.read().decode("utf-8", "replace")
        finally:
            connection.close()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise RuntimeError("server did not stop within 60 s of SIGTERM")
        self.reader.join(10)
        return self.process.returncode

    def __exit__(self, kind, value, traceback):
        code = self.stop()
        if kind is None and code != 0:
            raise RuntimeError(f"server exited with {code}:\n" + "\n".join(self.log[-20:]))
        return False


class Checks:
    """Counts named checks; prints each; exits non-zero at the end if any failed."""

    def __init__(self):
        self.failed = []
        self.passed = 0

    def check(self, name, condition, detail=""):
        if condition:
            self.passed += 1
            print(f"ok    {name}")
        else:
            self.failed.append(name)
            print(f"FAIL  {name} {detail}")

    def finish(self):
        print(f"{self.passed} passed, {len(self.failed)} failed")
        sys.exit(1 if self.failed else 0)
