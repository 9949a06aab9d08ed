"""The chat page at / in a real browser (Debian's headless Chromium through
Selenium) against `mlx-cpp serve` on the default model: streaming, stop
(the server counts the cancellation), regenerate, edit and resend,
conversations kept across reloads, switching and renaming, settings that
reach the server, the server's own error messages, an API key, a stopped
server, hostile HTML in a reply, a phone-sized screen, keyboard only, and
no console errors.

With MLX_CPP_WEBUI_SCREENSHOTS=DIR it also saves the screenshots that
docs/webui.md shows.

Usage: chat_page_e2e.py MLX_CPP_BINARY"""
import json
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))
from server_process import Checks, Server, model_directory  # noqa: E402
from browser import Browser, missing_browser  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

SCREENSHOTS = os.environ.get("MLX_CPP_WEBUI_SCREENSHOTS")

LAST_ANSWER = """
const answers = document.querySelectorAll('#messages .message.assistant');
return answers.length ? answers[answers.length - 1].querySelector('.content').textContent : null;"""


def screenshot(browser, name):
    if SCREENSHOTS:
        os.makedirs(SCREENSHOTS, exist_ok=True)
        browser.driver.save_screenshot(os.path.join(SCREENSHOTS, name + ".png"))


def open_page(browser, server):
    browser.driver.get(f"http://127.0.0.1:{server.port}/")
    browser.wait(lambda: browser.js("return document.body.dataset.server") == "ready", 60,
                 "the page never saw the server ready")


def messages(browser):
    return browser.js("""return [...document.querySelectorAll('#messages .message')].map(m => ({
        role: m.classList.contains('user') ? 'user' : 'assistant',
        text: m.querySelector('.content').textContent,
        notice: m.querySelector('.notice').hidden ? '' : m.querySelector('.notice').textContent,
        stats: m.querySelector('.stats').textContent}))""")


def raw_messages(browser):
    """The conversation as the page keeps it (the text before markdown)."""
    return browser.js("return window.mlxCpp.page.current.messages")


def idle(browser):
    return browser.js("return document.body.dataset.busy") != "true"


def type_and_send(browser, text, use_enter=False):
    box = browser.driver.find_element(By.ID, "input")
    box.clear()
    box.send_keys(text)
    if use_enter:
        box.send_keys(Keys.ENTER)
    else:
        browser.driver.find_element(By.ID, "send").click()


def send_and_watch(browser, text, timeout=120):
    """Sends `text`; returns the answer's text lengths seen while it streamed."""
    before = len(messages(browser))
    type_and_send(browser, text)
    browser.wait(lambda: len(messages(browser)) >= before + 2, 30, "no answer appeared")
    lengths = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        lengths.append(len(browser.js(LAST_ANSWER) or ""))
        if idle(browser):
            break
        time.sleep(0.03)
    return lengths


def set_setting(browser, name, value):
    browser.driver.find_element(By.ID, "open-settings").click()
    field = browser.driver.find_element(By.ID, f"set-{name}")
    if field.tag_name == "select":
        browser.js("arguments[0].value = arguments[1];"
                   "arguments[0].dispatchEvent(new Event('change'))", field, value)
    else:
        field.clear()
        field.send_keys(str(value))
        browser.js("arguments[0].dispatchEvent(new Event('change'))", field)
    browser.driver.find_element(By.ID, "close-settings").click()


def metric(server, name):
    _, text = server.request("GET", "/metrics")
    match = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(match.group(1)) if match else None


def api_answer(server, conversation, **fields):
    status, body = server.request("POST", "/v1/chat/completions",
                                  {"messages": conversation, **fields})
    return status, json.loads(body)


def check_streaming_and_settings(checks, browser, server):
    entries = browser.read_console()
    checks.check("page loads without console errors", not browser.errors(entries),
                 browser.errors(entries))
    checks.check("the model's name is shown",
                 browser.js("return document.getElementById('model-name').textContent")
                 == "smollm2-135m-instruct")
    checks.check("the context length is shown",
                 "/ 8192 tokens" in browser.js(
                     "return document.getElementById('context-usage').textContent"))
    set_setting(browser, "temperature", 0)
    set_setting(browser, "max_tokens", 48)
    question = "Write a short poem about the sea."
    lengths = send_and_watch(browser, question)
    growing = sorted(set(length for length in lengths if length > 0))
    checks.check("the answer streams in (its text grows over several frames)",
                 len(growing) >= 3, lengths)
    shown = messages(browser)
    checks.check("one question and one answer", [m["role"] for m in shown] ==
                 ["user", "assistant"], shown)
    status, whole = api_answer(server, [{"role": "user", "content": question}],
                               temperature=0, max_tokens=48)
    page_answer = raw_messages(browser)[1]["content"]
    checks.check("the page's answer is the API's answer for its settings (temperature 0, "
                 "max tokens 48)", status == 200 and
                 whole["choices"][0]["message"]["content"] == page_answer, (page_answer, whole))
    stats = shown[1]["stats"]
    checks.check("the answer shows its tokens, speed and time to first token",
                 f"{whole['usage']['completion_tokens']} tokens" in stats and "tokens/s" in stats
                 and "first token" in stats, stats)
    checks.check("the context use is updated",
                 f"context: {whole['usage']['total_tokens']} / 8192" in browser.js(
                     "return document.getElementById('context-usage').textContent"))
    if whole["choices"][0]["finish_reason"] == "length":
        checks.check("an answer cut by max tokens says so", "token limit" in shown[1]["notice"],
                     shown[1])
    screenshot(browser, "chat-light")

    # A second turn reuses the first turn's prompt from the prefix cache.
    send_and_watch(browser, "Now make it rhyme.")
    shown = messages(browser)
    checks.check("a second turn shows cached prompt tokens", "prompt tokens cached" in
                 shown[-1]["stats"], shown[-1])

    # Regenerate at temperature 0 gives the same answer again.
    before = shown[-1]["text"]
    browser.driver.find_elements(By.XPATH, "//button[text()='Regenerate']")[-1].click()
    browser.wait(lambda: not idle(browser), 10)
    browser.wait(lambda: idle(browser), 120)
    shown = messages(browser)
    checks.check("regenerate replaces the last answer (same text at temperature 0)",
                 len(shown) == 4 and shown[-1]["text"] == before, shown)

    # Edit the first question and send it again: what followed it is gone.
    browser.driver.find_elements(By.XPATH, "//button[text()='Edit']")[0].click()
    editor = browser.driver.find_element(By.CSS_SELECTOR, "textarea.editor")
    editor.send_keys(Keys.CONTROL, "a")
    editor.send_keys("Name three colours.")
    editor.send_keys(Keys.ENTER)
    browser.wait(lambda: not idle(browser) or len(messages(browser)) == 2, 10)
    browser.wait(lambda: idle(browser), 120)
    shown = messages(browser)
    checks.check("edit and resend keeps the edited question and answers it anew",
                 len(shown) == 2 and shown[0]["text"] == "Name three colours."
                 and shown[1]["text"].strip() != "", shown)

    # The server's own message for a request it refuses.
    set_setting(browser, "top_p", 7)
    send_and_watch(browser, "Hello")
    status, refused = api_answer(server, [{"role": "user", "content": "Hello"}], top_p=7)
    shown = messages(browser)
    checks.check("a refused request shows the server's own error message",
                 status == 400 and shown[-1]["notice"] == refused["error"]["message"],
                 (shown[-1], refused))
    set_setting(browser, "top_p", "")
    browser.read_console()  # the 400 above is logged by the browser, as it should be


def check_keyboard_reach(checks, browser):
    """Tab walks every control; none is left out of the order."""
    browser.driver.find_element(By.ID, "input").click()
    browser.driver.switch_to.active_element.send_keys(Keys.TAB)
    checks.check("Tab goes from the message box to Send",
                 browser.js("return document.activeElement.id") == "send")
    skipped = browser.js("""return [...document.querySelectorAll('button, input, select, textarea')]
        .filter(e => e.tabIndex < 0 && !e.closest('dialog')).length""")
    checks.check("no control is left out of the Tab order", skipped == 0, skipped)
    reached = set()
    for _ in range(40):
        browser.driver.switch_to.active_element.send_keys(Keys.TAB)
        reached.add(browser.js("return document.activeElement.id || "
                               "document.activeElement.className"))
    checks.check("Tab reaches the list, the settings and the message box",
                 {"new-chat", "open-settings", "input", "export-all"} <= reached, reached)


def check_stop(checks, browser, server):
    cancelled_before = metric(server, "mlx_cpp_generations_cancelled_total")
    set_setting(browser, "max_tokens", 2000)
    type_and_send(browser, "Tell me a very long story about a dragon, in many chapters.",
                  use_enter=True)  # keyboard: Enter sends
    browser.wait(lambda: len(browser.js(LAST_ANSWER) or "") > 40, 60, "the answer never began")
    browser.driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)  # Escape stops
    browser.wait(lambda: idle(browser), 10, "Escape did not stop the answer")
    shown = messages(browser)
    checks.check("Escape stops a long answer and the page says so",
                 shown[-1]["notice"] == "Stopped." and len(shown[-1]["text"]) > 40, shown[-1])
    deadline = time.time() + 10
    while time.time() < deadline and \
            metric(server, "mlx_cpp_generations_cancelled_total") <= cancelled_before:
        time.sleep(0.1)
    checks.check("the server counts the stopped generation as cancelled",
                 metric(server, "mlx_cpp_generations_cancelled_total") > cancelled_before)
    # The Stop button does the same.
    type_and_send(browser, "Write a long essay about the history of ships.")
    browser.wait(lambda: len(browser.js(LAST_ANSWER) or "") > 20, 60)
    before = metric(server, "mlx_cpp_generations_cancelled_total")
    browser.driver.find_element(By.ID, "stop").click()
    browser.wait(lambda: idle(browser), 10)
    deadline = time.time() + 10
    while time.time() < deadline and metric(server, "mlx_cpp_generations_cancelled_total") <= before:
        time.sleep(0.1)
    checks.check("the Stop button cancels the generation on the server",
                 metric(server, "mlx_cpp_generations_cancelled_total") > before
                 and messages(browser)[-1]["notice"] == "Stopped.")
    set_setting(browser, "max_tokens", 48)


def conversation_titles(browser):
    return browser.js("return [...document.querySelectorAll('#conversation-list .conversation')]"
                      ".map(b => b.textContent)")


def check_conversations(checks, browser, server):
    first = messages(browser)
    browser.driver.refresh()
    open_page(browser, server)
    checks.check("after a reload the conversation is still there", messages(browser) == first,
                 (messages(browser), first))
    # A second conversation, then switch back and forth.
    browser.driver.find_element(By.ID, "new-chat").click()
    checks.check("a new chat starts empty", messages(browser) == [])
    send_and_watch(browser, "What is two plus two?")
    second = messages(browser)
    checks.check("two conversations are listed", len(conversation_titles(browser)) == 2,
                 conversation_titles(browser))
    browser.driver.find_elements(By.CSS_SELECTOR, "#conversation-list .conversation")[1].click()
    checks.check("switching shows the other conversation", messages(browser) == first)
    browser.driver.find_elements(By.CSS_SELECTOR, "#conversation-list .conversation")[0].click()
    checks.check("and back", messages(browser) == second)
    # Rename by keyboard: the ✎ button, a name, Enter.
    browser.driver.find_elements(By.CSS_SELECTOR, "#conversation-list .rename")[0].click()
    field = browser.driver.find_element(By.CSS_SELECTOR, ".rename-input")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("Arithmetic", Keys.ENTER)
    browser.driver.refresh()
    open_page(browser, server)
    checks.check("a renamed conversation keeps its name after a reload",
                 "Arithmetic" in conversation_titles(browser), conversation_titles(browser))
    # The system prompt is kept per conversation.
    browser.driver.find_element(By.CSS_SELECTOR, "#system-box summary").click()
    browser.driver.find_element(By.ID, "system-prompt").send_keys("Answer in French.")
    browser.driver.find_elements(By.CSS_SELECTOR, "#conversation-list .conversation")[1].click()
    other_system = browser.js("return document.getElementById('system-prompt').value")
    browser.driver.find_elements(By.CSS_SELECTOR, "#conversation-list .conversation")[0].click()
    checks.check("the system prompt belongs to its conversation",
                 other_system == "" and browser.js(
                     "return document.getElementById('system-prompt').value") == "Answer in French.")
    # Export: the file a click downloads.
    downloads = os.path.join(browser.profile, "downloads")
    os.makedirs(downloads, exist_ok=True)
    browser.driver.execute_cdp_cmd("Browser.setDownloadBehavior",
                                   {"behavior": "allow", "downloadPath": downloads})
    browser.driver.find_elements(By.CSS_SELECTOR, "#conversation-list .export")[0].click()
    deadline = time.time() + 10
    files = []
    while time.time() < deadline and not files:
        files = [name for name in os.listdir(downloads) if name.endswith(".json")]
        time.sleep(0.1)
    exported = {}
    if files:
        time.sleep(0.2)
        with open(os.path.join(downloads, files[0])) as file:
            exported = json.load(file)
    kept = raw_messages(browser)
    checks.check("export downloads the conversation as JSON",
                 exported.get("format") == "mlx-cpp-conversations" and
                 [m["content"] for m in exported["conversations"][0]["messages"]] ==
                 [m["content"] for m in kept] and
                 exported["conversations"][0]["system"] == "Answer in French.", exported)
    # Delete the second conversation (the browser's confirm is accepted).
    browser.driver.find_elements(By.CSS_SELECTOR, "#conversation-list .delete")[1].click()
    browser.driver.switch_to.alert.accept()
    checks.check("delete removes a conversation", conversation_titles(browser) == ["Arithmetic"],
                 conversation_titles(browser))
    entries = browser.read_console()
    checks.check("no console errors while chatting, stopping, switching and reloading",
                 not browser.errors(entries), browser.errors(entries))


# Each line a block of its own (HTML blocks end at a blank line).
HOSTILE_REPLY = """Here you go:

<script>window.__owned = 'script'</script>

<img src="x" onerror="window.__owned = 'img'">

<a href="javascript:window.__owned='link'">click me</a> and [also me](javascript:window.__owned='md')

<iframe srcdoc="<script>parent.__owned='iframe'</script>"></iframe>

<div onmouseover="window.__owned='hover'" style="position:fixed;inset:0">cover</div>

![tracker](http://127.0.0.1:9/leak.png)

<svg><animate onbegin="window.__owned='svg'" attributeName="x" dur="1s"/></svg>
"""


FORMATTED_REPLY = """Steps:

1. first
2. second

| model | size |
|---|---|
| SmolLM2 | 135M |

```python
def add(a, b):
    return a + b
```
"""


def show_stored_answer(browser, server, name, question, answer):
    """Stores a conversation of `question` and its `answer` (the text, or a
    whole stored message) and opens it: a reload renders stored answers
    through the same path as streamed ones."""
    if isinstance(answer, str):
        answer = {"role": "assistant", "content": answer}
    conversation = {"id": name, "title": name, "system": "", "created": 1,
                    "updated": time.time() * 1000 + 1e6, "contextTokens": 0,
                    "messages": [{"role": "user", "content": question}, answer]}
    browser.js("const all = JSON.parse(localStorage.getItem('mlx-cpp.conversations') || '[]');"
               "all.push(arguments[0]);"
               "localStorage.setItem('mlx-cpp.conversations', JSON.stringify(all));", conversation)
    browser.driver.refresh()
    open_page(browser, server)


def check_markdown(checks, browser, server):
    show_stored_answer(browser, server, "Formatting", "Show me formatting.", FORMATTED_REPLY)
    found = browser.js("""
        const answer = document.querySelector('#messages .message.assistant .content');
        return {items: answer.querySelectorAll('ol > li').length,
                cells: answer.querySelectorAll('table td').length,
                keywords: answer.querySelectorAll('.code-block code .hljs-keyword').length,
                copy: answer.querySelectorAll('.code-block button.copy').length,
                language: (answer.querySelector('.code-bar span') || {}).textContent};""")
    checks.check("markdown renders lists, tables and highlighted code with a copy button",
                 found == {"items": 2, "cells": 2, "keywords": 2, "copy": 1,
                           "language": "python"}, found)
    browser.driver.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": f"http://127.0.0.1:{server.port}",
        "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    browser.driver.find_element(By.CSS_SELECTOR, ".code-block button.copy").click()
    browser.wait(lambda: browser.js(
        "return document.querySelector('.code-block button.copy').textContent") != "Copy", 5)
    copied = browser.driver.execute_async_script(
        "navigator.clipboard.readText().then(arguments[0], e => arguments[0]('error: ' + e))")
    checks.check("the copy button copies the code", copied ==
                 "def add(a, b):\n    return a + b\n", copied)


def check_reasoning_and_tool_calls(checks, browser, server):
    show_stored_answer(browser, server, "Agent", "What is the weather in Paris?", {
        "role": "assistant", "content": "",
        "reasoning": "The user wants the weather. I should call the tool.",
        "toolCalls": [{"id": "call_1", "name": "get_weather",
                       "arguments": "{\"city\": \"Paris\"}"}]})
    found = browser.js("""
        const answer = document.querySelector('#messages .message.assistant');
        const reasoning = answer.querySelector('details.reasoning');
        return {open: reasoning.open, hidden: reasoning.hidden,
                summary: reasoning.querySelector('summary').textContent,
                call: answer.querySelector('.tool-call code').textContent,
                args: answer.querySelector('.tool-call pre').textContent};""")
    checks.check("reasoning is shown apart, collapsed, with its length",
                 found["open"] is False and not found["hidden"] and
                 found["summary"] == "Reasoning (10 words)", found)
    checks.check("a tool call is shown as a call", found["call"] == "get_weather" and
                 json.loads(found["args"]) == {"city": "Paris"}, found)
    sent = browser.js("return window.mlxCpp.requestMessages(window.mlxCpp.page.current)")
    checks.check("a tool call goes back to the server in OpenAI's shape",
                 sent[1].get("tool_calls") == [{"id": "call_1", "type": "function", "function": {
                     "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}], sent)


def check_hostile_reply(checks, browser, server):
    browser.read_console()
    show_stored_answer(browser, server, "Hostile", "<b onclick=alert(1)>hi</b>", HOSTILE_REPLY)
    time.sleep(1.5)  # an animation or a load handler would have run by now
    for link in browser.driver.find_elements(By.CSS_SELECTOR, "#messages a"):
        browser.js("arguments[0].dispatchEvent(new MouseEvent('mouseover', {bubbles: true}))", link)
    result = browser.js("""
        const box = document.getElementById('messages');
        const handlers = [...box.querySelectorAll('*')].filter(e =>
            [...e.attributes].some(a => a.name.startsWith('on') || a.name === 'style'));
        return {owned: window.__owned || null,
                scripts: box.querySelectorAll('script, iframe, img, svg, object, embed').length,
                handlers: handlers.length,
                links: [...box.querySelectorAll('a')].map(a => a.getAttribute('href') || ''),
                userText: box.querySelector('.message.user .content').textContent};""")
    checks.check("a hostile reply runs nothing", result["owned"] is None, result)
    checks.check("no script, frame, image or svg survives sanitising", result["scripts"] == 0,
                 result)
    checks.check("no event handler or style attribute survives", result["handlers"] == 0, result)
    checks.check("no javascript: link survives",
                 not any(href.lower().startswith("javascript") for href in result["links"]),
                 result)
    checks.check("a user's markup is shown as text", result["userText"] ==
                 "<b onclick=alert(1)>hi</b>", result)
    shown = browser.js(LAST_ANSWER)
    checks.check("the reply's HTML is shown as text",
                 "<script>window.__owned = 'script'</script>" in shown and
                 '<img src="x" onerror=' in shown, shown)
    checks.check("its markdown links are links, with the javascript: one defused",
                 len(result["links"]) == 2 and "Here you go" in shown, result)
    entries = browser.read_console()
    checks.check("the hostile reply left nothing for the Content-Security-Policy to block",
                 not browser.errors(entries), browser.errors(entries))


def check_phone(checks, server):
    with Browser(width=390, height=780) as phone:
        open_page(phone, server)
        sidebar_hidden = phone.js(
            "return getComputedStyle(document.getElementById('sidebar')).visibility") == "hidden"
        checks.check("on a phone-sized screen the list is folded away", sidebar_hidden)
        checks.check("nothing is wider than the screen", phone.js(
            "return document.documentElement.scrollWidth <= window.innerWidth"))
        send_and_watch(phone, "Say hi.")
        checks.check("a phone can chat", len(messages(phone)) == 2 and messages(phone)[1]["text"])
        screenshot(phone, "phone")
        phone.driver.find_element(By.ID, "open-sidebar").click()
        phone.wait(lambda: phone.js(
            "return getComputedStyle(document.getElementById('sidebar')).visibility") == "visible",
            5)
        checks.check("the ☰ button opens the list", True)
        time.sleep(0.3)
        screenshot(phone, "phone-list")
        entries = phone.read_console()
        checks.check("no console errors on the phone", not phone.errors(entries),
                     phone.errors(entries))


def check_dark(checks, server):
    with Browser(dark=True) as browser:
        open_page(browser, server)
        background = browser.js("return getComputedStyle(document.body).backgroundColor")
        checks.check("dark mode follows the system", background == "rgb(21, 23, 27)", background)
        send_and_watch(browser, "Show a Python hello world in a code block.")
        set_setting(browser, "theme", "light")
        light = browser.js("return getComputedStyle(document.body).backgroundColor")
        set_setting(browser, "theme", "dark")
        checks.check("the theme setting overrides it", light == "rgb(255, 255, 255)", light)
        screenshot(browser, "chat-dark")
        browser.driver.find_element(By.ID, "open-settings").click()
        time.sleep(0.2)
        screenshot(browser, "settings")
        browser.driver.find_element(By.ID, "close-settings").click()


def check_api_key(checks, mlx_cpp, model):
    with Server(mlx_cpp, model, "--api-key", "sesame", "--quiet") as server, Browser() as browser:
        browser.driver.get(f"http://127.0.0.1:{server.port}/")
        browser.wait(lambda: browser.js(
            "return document.getElementById('key-dialog').open"), 30, "no key dialog")
        checks.check("a server with an API key asks for it", True)
        screenshot(browser, "api-key")
        browser.driver.find_element(By.ID, "key-input").send_keys("wrong", Keys.ENTER)
        browser.wait(lambda: browser.js(
            "return document.getElementById('key-dialog').open && "
            "!document.getElementById('key-error').hidden"), 30)
        checks.check("a wrong key is refused and asked again", "not accepted" in browser.js(
            "return document.getElementById('key-error').textContent"))
        browser.driver.find_element(By.ID, "key-input").send_keys("sesame", Keys.ENTER)
        browser.wait(lambda: browser.js("return document.body.dataset.server") == "ready", 30)
        send_and_watch(browser, "Hi!")
        checks.check("with the key the page chats", messages(browser)[-1]["text"].strip() != "",
                     messages(browser))
        browser.driver.refresh()
        browser.wait(lambda: browser.js("return document.body.dataset.server") == "ready", 30)
        checks.check("the key is kept in the browser", not browser.js(
            "return document.getElementById('key-dialog').open"))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LoadingServer(Server):
    """A server the test does not wait for: the page meets it loading."""

    def wait_healthy(self, timeout=300):
        pass


def check_stopped_then_loading(checks, mlx_cpp, model):
    """The server stops under an open page, then a server loading another
    model comes up on the same port: the page says each, and recovers."""
    port = free_port()
    with Browser() as browser:
        with Server(mlx_cpp, model, "--quiet", port=port) as server:
            open_page(browser, server)
        # The server has exited.
        type_and_send(browser, "Are you there?")
        browser.wait(lambda: idle(browser) and not browser.js(
            "return document.getElementById('status').hidden"), 30)
        status = browser.js("return document.getElementById('status').textContent")
        checks.check("a stopped server gets a message that says so",
                     "Cannot reach mlx-cpp serve" in status, status)
        checks.check("the unanswered question says why",
                     "Cannot reach" in messages(browser)[-1]["notice"], messages(browser))
        screenshot(browser, "server-stopped")
        # Seconds to load: long enough for the page's polling to see it loading.
        name = "qwen2.5-coder-1.5b-instruct"
        found = subprocess.run([mlx_cpp, "models", "--path", name], capture_output=True, text=True)
        if found.returncode != 0:
            print(f"skip  the loading message: {name} is not pulled (scripts/test pulls it)")
            return
        browser.js("""window.seenStatus = [];
            new MutationObserver(() => window.seenStatus.push(
                document.getElementById('status').textContent))
              .observe(document.getElementById('status'), {childList: true});""")
        with LoadingServer(mlx_cpp, found.stdout.strip(), "--quiet", port=port):
            browser.wait(lambda: browser.js("return document.body.dataset.server") == "ready", 300,
                         "the page never saw the new server ready")
            seen = browser.js("return window.seenStatus")
            checks.check("a loading server gets a message that says so",
                         "The model is loading…" in seen, seen)
            checks.check("the page recovers once the model is ready, naming the new model",
                         browser.js("return document.getElementById('status').hidden") and
                         browser.js("return document.getElementById('model-name').textContent")
                         == name)


def check_no_webui(checks, mlx_cpp, model):
    with Server(mlx_cpp, model, "--no-webui", "--quiet") as server:
        status, _ = server.request("GET", "/")
        checks.check("--no-webui serves no page", status == 404, status)


def main():
    why = missing_browser()
    if why:
        print(why)
        sys.exit(1)  # CI installs the browser: its absence is a failure, not a skip
    mlx_cpp = sys.argv[1]
    model = model_directory(mlx_cpp)
    checks = Checks()
    with Server(mlx_cpp, model, "--quiet") as server:
        with Browser() as browser:
            open_page(browser, server)
            check_streaming_and_settings(checks, browser, server)
            check_keyboard_reach(checks, browser)
            check_stop(checks, browser, server)
            check_conversations(checks, browser, server)
            check_markdown(checks, browser, server)
            check_reasoning_and_tool_calls(checks, browser, server)
            check_hostile_reply(checks, browser, server)
        check_phone(checks, server)
        check_dark(checks, server)
    check_api_key(checks, mlx_cpp, model)
    check_stopped_then_loading(checks, mlx_cpp, model)
    check_no_webui(checks, mlx_cpp, model)
    checks.finish()


if __name__ == "__main__":
    main()
