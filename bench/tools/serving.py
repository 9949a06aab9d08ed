"""What the serving benchmarks (bench/serve-load, bench/speculative) share:
a streamed chat request timed per content delta, a server process on a
free loopback port, and where the pulled models and llama.cpp's programs
are."""
import collections
import ctypes
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fail(message):
    raise SystemExit(f"{os.path.basename(sys.argv[0])}: {message}")


class RequestRecord:
    __slots__ = ("client", "index", "sent", "first", "last", "end", "deltas", "usage_tokens",
                 "prompt_tokens", "cached_tokens", "finish", "error", "text")

    def __init__(self, client, index):
        self.client, self.index = client, index
        self.sent = self.first = self.last = self.end = None
        self.deltas = 0
        self.usage_tokens = self.prompt_tokens = self.cached_tokens = None
        self.finish = self.error = None
        self.text = []

    @property
    def tokens(self):
        return self.usage_tokens if self.usage_tokens is not None else self.deltas

    @property
    def ttft(self):
        return None if self.first is None else self.first - self.sent

    @property
    def decode_tps(self):
        if self.first is None or self.last is None or self.last <= self.first or self.tokens < 2:
            return None
        return (self.tokens - 1) / (self.last - self.first)

    def as_json(self):
        return {"client": self.client, "index": self.index, "ttft_s": self.ttft,
                "decode_tps": self.decode_tps, "completion_tokens": self.tokens,
                "usage_completion_tokens": self.usage_tokens, "content_deltas": self.deltas,
                "prompt_tokens": self.prompt_tokens, "cached_tokens": self.cached_tokens,
                "finish_reason": self.finish, "error": self.error,
                "duration_s": None if self.end is None else self.end - self.sent}


def post_json(port, path, body, timeout):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", path, body=json.dumps(body),
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        text = response.read().decode("utf-8", "replace")
        if response.status != 200:
            raise RuntimeError(f"POST {path}: {response.status} {text[:300]}")
        return json.loads(text)
    finally:
        connection.close()


def stream_chat(port, body, record, deadline):
    """Sends one streamed chat request and fills `record`; never raises for
    the request's own failures (they land in record.error)."""
    connection = None
    record.sent = time.perf_counter()
    try:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("phase time limit reached before sending")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=remaining)
        record.sent = time.perf_counter()
        connection.request("POST", "/v1/chat/completions", body=json.dumps(body),
                           headers={"Content-Type": "application/json",
                                    "Accept": "text/event-stream"})
        response = connection.getresponse()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: "
                               f"{response.read(300).decode('utf-8', 'replace')}")
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError("phase time limit reached mid-stream")
            line = response.readline()
            if not line:
                raise RuntimeError("stream ended without [DONE]")
            now = time.perf_counter()
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                break
            event = json.loads(payload)
            if "error" in event:
                raise RuntimeError(f"error event: {json.dumps(event['error'])[:300]}")
            for choice in event.get("choices") or []:
                content = (choice.get("delta") or {}).get("content")
                if content:
                    if record.first is None:
                        record.first = now
                    record.last = now
                    record.deltas += 1
                    record.text.append(content)
                if choice.get("finish_reason"):
                    record.finish = choice["finish_reason"]
            usage = event.get("usage")
            if usage:
                record.usage_tokens = usage.get("completion_tokens")
                record.prompt_tokens = usage.get("prompt_tokens")
                record.cached_tokens = (usage.get("prompt_tokens_details") or {}).get(
                    "cached_tokens")
    except Exception as error:  # noqa: BLE001 - reported per request, the phase goes on
        record.error = f"{type(error).__name__}: {error}"
    finally:
        record.end = time.perf_counter()
        if connection is not None:
            connection.close()


# ---------------------------------------------------------------- servers

def _parent_death_signal():
    # Children get SIGTERM if this process dies without its finally blocks
    # running (SIGKILL): no server outlives the benchmark. Looked up before
    # any fork so the child only makes one system call.
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


PARENT_DEATH_SIGNAL = _parent_death_signal()


class Server:
    """A server process on a free loopback port; its output is drained
    into a bounded log so it can never block on a full pipe."""

    def __init__(self, label, command):
        self.label, self.command = label, command
        self.process = None
        self.port = None
        self.log = collections.deque(maxlen=400)

    def start(self, timeout):
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        preexec_fn=PARENT_DEATH_SIGNAL)
        found = threading.Event()

        def drain():
            for raw in self.process.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self.log.append(line)
                match = re.search(r"listening on http://[^\s:]+:(\d+)", line)
                if match and self.port is None:
                    self.port = int(match.group(1))
                    found.set()
            found.set()

        self.reader = threading.Thread(target=drain, daemon=True)
        self.reader.start()
        deadline = time.monotonic() + timeout
        if not found.wait(timeout) or self.port is None:
            raise RuntimeError(f"{self.label} did not start:\n{self.tail()}")
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.label} exited with {self.process.returncode}:\n"
                                   f"{self.tail()}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                connection.request("GET", "/health")
                status = connection.getresponse().status
                connection.close()
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.label} never became healthy:\n{self.tail()}")

    def tail(self, lines=20):
        return "\n".join(list(self.log)[-lines:])

    def stop(self):
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                print(f"{os.path.basename(sys.argv[0])}: {self.label} ignored SIGTERM for 60 s; killing it",
                      file=sys.stderr)
                self.process.kill()
                self.process.wait()
        self.reader.join(5)
        self.process = None

    def tokenize_count(self, text):
        answer = post_json(self.port, "/tokenize", {"content": text}, timeout=120)
        return answer["count"] if "count" in answer else len(answer["tokens"])



# ---------------------------------------------------------------- setup

def model_cache_root():
    home = os.environ.get("MLX_CPP_HOME")
    return home if home else os.path.join(os.path.expanduser("~"), ".cache", "mlx-cpp")


def gguf_of(name):
    # `mlx-cpp pull` records the GGUF it converted from in registry.json, as
    # bench/compare reads it.
    registry = os.path.join(model_cache_root(), "registry.json")
    try:
        with open(registry, encoding="utf-8") as handle:
            return json.load(handle)[name]["gguf"]
    except (OSError, KeyError, ValueError) as error:
        fail(f"no GGUF recorded for {name} in {registry}: {error}")


def build_llama_server():
    helper = os.path.join(ROOT, "bench", "tools", "build-llama-cpp")
    done = subprocess.run([helper, "llama-server"], stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        fail("building llama-server failed")
    return done.stdout.strip().splitlines()[-1]
