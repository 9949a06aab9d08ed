"""The engine for many clients, end to end on the default model (loopback):
  * 16 streaming clients that hang up at random points leave nothing
    behind: /stats returns to idle (no sequence, no queued request, no
    cache held or reserved by a running sequence);
  * two clients taking turns in two-turn conversations both start their
    second turn from their own first turn (cached_tokens covers it);
  * SIGTERM during a full batch: every running answer ends with its last
    events ([DONE]) and the server exits 0;
  * a memory budget too small for the model is refused at start-up, naming
    both sizes.

usage: batching_e2e.py MLX_CPP_BINARY [MODEL_NAME]"""
import http.client
import json
import random
import signal
import subprocess
import sys
import threading
import time

from server_process import DEFAULT_MODEL, Checks, Server, model_directory


def open_stream(port, content, max_tokens):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = {"model": "m", "stream": True, "max_tokens": max_tokens, "temperature": 0,
            "messages": [{"role": "user", "content": content}]}
    connection.request("POST", "/v1/chat/completions", body=json.dumps(body),
                       headers={"Content-Type": "application/json"})
    return connection, connection.getresponse()


def read_events(response, limit=None):
    """SSE payloads, up to `limit` of them (None: to the end)."""
    events = []
    while limit is None or len(events) < limit:
        line = response.readline()
        if not line:
            break
        line = line.decode().strip()
        if line.startswith("data: "):
            events.append(line[6:])
            if events[-1] == "[DONE]":
                break
    return events


def stats(server):
    status, body = server.request("GET", "/stats")
    return json.loads(body) if status == 200 else {}


def idle(snapshot):
    return (snapshot.get("requests", {}).get("active") == 0 and
            all(v == 0 for v in snapshot.get("sequences", {}).values()) and
            snapshot.get("memory", {}).get("kv_cache_bytes") == 0 and
            snapshot.get("memory", {}).get("kv_cache_reserved_bytes") == 0)


def hang_ups(server, checks):
    chooser = random.Random(7)
    cuts = [chooser.randint(0, 12) for _ in range(16)]

    def client(index):
        connection, response = open_stream(server.port, f"Tell a long story about place {index}.",
                                           200)
        read_events(response, cuts[index])
        connection.sock.close()  # gone without a word
        connection.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    deadline, snapshot = time.time() + 120, {}
    while time.time() < deadline:
        snapshot = stats(server)
        if idle(snapshot):
            break
        time.sleep(0.2)
    checks.check("hang-ups: /stats back to idle", idle(snapshot), json.dumps(snapshot))
    status, _ = server.request("POST", "/v1/chat/completions", {
        "model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]})
    checks.check("hang-ups: the server still answers", status == 200, status)


def chat(server, messages):
    status, body = server.request("POST", "/v1/chat/completions", {
        "model": "m", "max_tokens": 12, "temperature": 0, "messages": messages})
    answer = json.loads(body)
    return answer["choices"][0]["message"]["content"], answer["usage"]


def alternating_turns(server, checks):
    conversations = {name: [{"role": "user", "content": f"My name is {name}. Say hello."}]
                     for name in ("Ada", "Bob")}
    first = {}
    for name, messages in conversations.items():
        text, usage = chat(server, messages)
        first[name] = usage
        messages += [{"role": "assistant", "content": text},
                     {"role": "user", "content": "What is my name?"}]
    for name, messages in conversations.items():
        _, usage = chat(server, messages)
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        checks.check(f"alternating turns: {name}'s second turn starts from the first",
                     cached >= first[name]["prompt_tokens"],
                     f"cached {cached}, first prompt {first[name]['prompt_tokens']}")


def sigterm_during_batch(mlx_cpp, directory, checks):
    with Server(mlx_cpp, directory, "--quiet", "--max-batch", "8",
                "--shutdown-grace", "0") as server:
        streams, endings = [], [None] * 8
        for index in range(8):
            streams.append(open_stream(server.port, f"Count slowly from {index}.", 400))
        for _, response in streams:
            read_events(response, 2)  # every answer is under way

        def finish(index):
            endings[index] = read_events(streams[index][1])

        readers = [threading.Thread(target=finish, args=(i,)) for i in range(8)]
        for reader in readers:
            reader.start()
        server.process.send_signal(signal.SIGTERM)
        for reader in readers:
            reader.join(120)
        code = server.process.wait(120)
        for index, events in enumerate(endings):
            ended = bool(events) and events[-1] == "[DONE]"
            reasons = [json.loads(e)["choices"][0].get("finish_reason")
                       for e in (events or []) if e != "[DONE]" and json.loads(e).get("choices")]
            checks.check(f"SIGTERM: answer {index} ends with its last events",
                         ended and any(reasons), events[-3:] if events else events)
        checks.check("SIGTERM: exit 0", code == 0, code)


def budget_refused(mlx_cpp, directory, checks):
    run = subprocess.run([mlx_cpp, "serve", "--model", directory, "--port", "0",
                          "--memory-budget", "1000000"], capture_output=True, text=True,
                         timeout=300)
    message = run.stderr
    checks.check("a budget too small for the model: exit 1", run.returncode == 1, run.returncode)
    checks.check("a budget too small for the model: both sizes named",
                 "weights" in message and "memory budget" in message, message[-400:])

def quantized_kv_requests(server, checks):
    """Per-request KV schemes: answers under kv_bits, a cache never shared
    across schemes, and bad schemes refused with 400 naming the field."""
    def ask(extra):
        body = {"model": "m", "max_tokens": 12, "temperature": 0,
                "messages": [{"role": "user", "content": "Name three colours."}]}
        body.update(extra)
        status, text = server.request("POST", "/v1/chat/completions", body)
        return status, json.loads(text)

    status, plain = ask({})
    checks.check("kv_bits: a float answer first", status == 200, status)
    for bits in (8, 4):
        status, answer = ask({"kv_bits": bits, "quantized_kv_start": 0})
        checks.check(f"kv_bits {bits}: answered", status == 200, status)
        cached = answer["usage"]["prompt_tokens_details"]["cached_tokens"]
        checks.check(f"kv_bits {bits}: no float cache entry reused", cached == 0, cached)
        status, again = ask({"kv_bits": bits, "quantized_kv_start": 0})
        cached = again["usage"]["prompt_tokens_details"]["cached_tokens"]
        checks.check(f"kv_bits {bits}: its own entry reused", cached > 0, cached)
        checks.check(f"kv_bits {bits}: the cached answer equals the first",
                     again["choices"][0]["message"]["content"]
                     == answer["choices"][0]["message"]["content"],
                     again["choices"][0]["message"]["content"])
    # TurboQuant at 4 bits: its own entry, never the affine one of the same bits.
    turbo = {"kv_bits": 4, "kv_scheme": "turbo", "quantized_kv_start": 0}
    status, answer = ask(turbo)
    checks.check("kv_scheme turbo: answered", status == 200, status)
    checks.check("kv_scheme turbo: no affine entry reused",
                 answer["usage"]["prompt_tokens_details"]["cached_tokens"] == 0, answer["usage"])
    status, again = ask(turbo)
    checks.check("kv_scheme turbo: its own entry reused, the same answer",
                 again["usage"]["prompt_tokens_details"]["cached_tokens"] > 0
                 and again["choices"][0]["message"]["content"]
                 == answer["choices"][0]["message"]["content"], again)
    status, answer = ask({"kv_bits": 8})  # quantized only past 5000 tokens: float here
    checks.check("kv_bits 8 below its start: the float answer",
                 status == 200 and answer["choices"][0]["message"]["content"]
                 == plain["choices"][0]["message"]["content"], answer)
    for extra, field in (({"kv_bits": 7}, "bits must be"),
                         ({"kv_bits": 4, "kv_group_size": 48}, "group size must be"),
                         ({"kv_group_size": 32}, "kv_group_size"),
                         ({"kv_bits": "eight"}, "kv_bits"),
                         ({"kv_bits": 6, "kv_scheme": "turbo"}, "TurboQuant KV cache bits"),
                         ({"kv_bits": 4, "kv_scheme": "rotated"}, "kv_scheme"),
                         ({"kv_scheme": "turbo"}, "kv_scheme")):
        status, answer = ask(extra)
        checks.check(f"bad KV scheme {extra}: 400 naming it",
                     status == 400 and field in json.dumps(answer), (status, answer))


def main():
    mlx_cpp = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_MODEL
    directory = model_directory(mlx_cpp, name)
    checks = Checks()
    with Server(mlx_cpp, directory, "--quiet", "--max-batch", "16") as server:
        hang_ups(server, checks)
        alternating_turns(server, checks)
        quantized_kv_requests(server, checks)
    sigterm_during_batch(mlx_cpp, directory, checks)
    budget_refused(mlx_cpp, directory, checks)
    checks.finish()


if __name__ == "__main__":
    main()
