"""Raw HTTP misbehaviour against `mlx-cpp serve` on the default model:
malformed JSON, wrong types, a huge body, an unknown route, a missing or
wrong API key, a prompt longer than the context, and a client that hangs
up mid-stream. Each gets the right status and an OpenAI-style error body;
the server keeps serving and frees the slot. Last, SIGTERM during a stream:
the stream still ends properly and the server exits 0.

usage: http_errors_e2e.py MLX_CPP_BINARY [MODEL_NAME]"""
import json
import signal
import socket
import sys
import threading
import time

from server_process import DEFAULT_MODEL, Checks, Server, model_directory

KEY = "test-key-123"
AUTH = {"Authorization": f"Bearer {KEY}"}
CHAT = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0}


def error_of(body):
    try:
        error = json.loads(body)["error"]
        return error if {"message", "type", "param", "code"} <= error.keys() else None
    except (ValueError, KeyError, TypeError):
        return None


def check_error(checks, name, answer, status, param=None):
    code, body = answer
    error = error_of(body)
    checks.check(f"{name}: {status} with an error body", code == status and error is not None,
                 f"{code} {body[:200]}")
    if param is not None and error is not None:
        checks.check(f"{name}: names '{param}'", error["param"] == param, str(error))


def still_serving(checks, server, after):
    code, body = server.request("POST", "/v1/chat/completions", CHAT, AUTH)
    checks.check(f"serves after {after}", code == 200 and "choices" in body, f"{code} {body[:200]}")


def active_requests(server):
    _, text = server.request("GET", "/metrics", headers=AUTH)
    for line in text.splitlines():
        if line.startswith("mlx_cpp_requests_active "):
            return int(line.split()[1])
    return None


def hang_up_mid_stream(server):
    """Starts a long stream, reads its first chunk, closes the socket."""
    body = json.dumps({"messages": [{"role": "user", "content": "Tell a long story."}],
                       "max_tokens": 200, "stream": True, "temperature": 0.8})
    request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}")
    with socket.create_connection(("127.0.0.1", server.port), timeout=600) as connection:
        connection.sendall(request.encode())
        received = b""
        while received.count(b"data: ") < 3:
            piece = connection.recv(4096)
            if not piece:
                break
            received += piece
    return received


def check_shutdown_mid_stream(checks, mlx_cpp, directory):
    with Server(mlx_cpp, directory, "--shutdown-grace", "1") as server:
        events, first = [], threading.Event()

        def read_stream():
            body = json.dumps({"messages": [{"role": "user", "content": "Tell a long story."}],
                               "max_tokens": 300, "stream": True, "temperature": 0.8})
            request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                       f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                       f"Connection: close\r\n\r\n{body}")
            with socket.create_connection(("127.0.0.1", server.port), timeout=600) as connection:
                connection.sendall(request.encode())
                received = b""
                while True:
                    piece = connection.recv(65536)
                    if not piece:
                        break
                    received += piece
                    if b"data: " in received:
                        first.set()
            events.extend(line[6:] for line in received.decode("utf-8", "replace").split("\n")
                          if line.startswith("data: "))
            first.set()

        reader = threading.Thread(target=read_stream)
        reader.start()
        first.wait(600)
        server.process.send_signal(signal.SIGTERM)
        reader.join(120)
        finishes = [json.loads(event)["choices"][0]["finish_reason"] for event in events
                    if event.startswith("{") and json.loads(event).get("choices")]
        checks.check("SIGTERM mid-stream: the stream ends with a finish_reason and [DONE]",
                     events[-1:] == ["[DONE]"] and
                     finishes[-1] in ("stop", "length", "cancelled"), str(events[-2:]))
        print(f"      (stream ended with finish_reason {finishes[-1]!r} after {len(finishes)} chunks)")
        code = server.process.wait(60)
        checks.check("SIGTERM: exit status 0", code == 0, str(code))


def main():
    mlx_cpp = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_MODEL
    directory = model_directory(mlx_cpp, name)
    checks = Checks()
    with Server(mlx_cpp, directory, "--api-key", KEY, "--ctx-size", "256",
                "--max-body-bytes", "65536") as server:
        post = lambda path, body, headers=AUTH: server.request("POST", path, body, headers)
        check_error(checks, "missing API key", post("/v1/chat/completions", CHAT, {}), 401)
        check_error(checks, "wrong API key",
                    post("/v1/chat/completions", CHAT, {"Authorization": "Bearer nope"}), 401)
        code, _ = server.request("GET", "/health")
        checks.check("health needs no key", code == 200)
        check_error(checks, "malformed JSON", post("/v1/chat/completions", '{"messages": [}'), 400)
        check_error(checks, "wrong type", post("/v1/chat/completions", {**CHAT, "max_tokens": "4"}),
                    400, "max_tokens")
        check_error(checks, "out of range",
                    post("/v1/chat/completions", {**CHAT, "temperature": -1}), 400, "temperature")
        check_error(checks, "n > 1", post("/v1/chat/completions", {**CHAT, "n": 2}), 400, "n")
        check_error(checks, "missing messages", post("/v1/chat/completions", {"model": "x"}), 400,
                    "messages")
        check_error(checks, "huge body",
                    post("/v1/chat/completions", json.dumps({**CHAT, "pad": "x" * 200_000})), 413)
        # 15,000 levels in 30 KB: deep enough to overflow the stack where JSON
        # becomes template values, were it let in.
        deep = "[" * 15000 + "]" * 15000
        check_error(checks, "JSON nested too deep",
                    post("/v1/chat/completions",
                         '{"messages": [{"role": "user", "content": "hi"}], '
                         '"chat_template_kwargs": {"x": ' + deep + '}}'), 400)
        still_serving(checks, server, "a body nested too deep")
        check_error(checks, "embeddings from a model that generates text",
                    post("/v1/embeddings", {"input": "hi"}), 400, "model")
        check_error(checks, "unknown route", server.request("GET", "/v1/engines", headers=AUTH),
                    404)
        long_prompt = {"messages": [{"role": "user", "content": "word " * 400}]}
        code, body = post("/v1/chat/completions", long_prompt)
        check_error(checks, "prompt longer than the context", (code, body), 400)
        checks.check("context error code", (error_of(body) or {}).get("code") ==
                     "context_length_exceeded", body[:200])
        still_serving(checks, server, "bad requests")

        received = hang_up_mid_stream(server)
        checks.check("stream started before the hang-up", b"200 OK" in received, received[:200])
        deadline = time.time() + 120
        while active_requests(server) != 0 and time.time() < deadline:
            time.sleep(0.1)
        checks.check("hang-up frees the slot", active_requests(server) == 0)
        still_serving(checks, server, "a client hung up")
        code, text = server.request("GET", "/metrics", headers=AUTH)
        checks.check("metrics count the errors",
                     code == 200 and 'status="400"' in text and "mlx_cpp_errors_total" in text)
        checks.check("one log line per request", any("/v1/chat/completions 401" in line
                                                      for line in server.log))
    check_shutdown_mid_stream(checks, mlx_cpp, directory)
    checks.finish()


if __name__ == "__main__":
    main()
