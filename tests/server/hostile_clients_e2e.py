"""Clients that attack the server's connections and bodies, against
`mlx-cpp serve` on the default model:
  - slow clients trickling header bytes, more than there are workers:
    /health and generations keep answering, and each trickler is cut at the
    header timeout with a 408;
  - idle connections past --max-connections get a 503, and the server
    serves again once they are gone; past --max-connections-per-client
    from one address a 429, while another address is still served;
  - gzip and deflate bodies: 415 without inflating; chunked bodies and
    bodies without a length past --max-body-bytes: 413 once the cap is
    read, never more; an oversize Content-Length: 413 before any of it;
  - keep-alive: several requests on one connection, pipelined too;
  - SIGTERM while slow clients stay connected: the process exits 0 at once;
  - a chat template that cannot render one user message: the server
    refuses the model at load, naming the template's error;
  - a client that hangs up while its prompt's (slow) template renders:
    the render stops, and the server goes on serving.

usage: hostile_clients_e2e.py MLX_CPP_BINARY [MODEL_NAME]"""
import gzip
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib

from server_process import DEFAULT_MODEL, Checks, Server, model_directory

CHAT = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0}


def connect(server):
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def read_answer(connection):
    """Reads until the peer closes (or 30 s): the raw bytes."""
    received = b""
    try:
        while True:
            piece = connection.recv(65536)
            if not piece:
                break
            received += piece
    except (socket.timeout, ConnectionResetError):
        pass
    return received


def status_of(raw):
    try:
        return int(raw.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


def raw_request(server, head, body=b""):
    with connect(server) as connection:
        connection.sendall(head.encode() + body)
        return read_answer(connection)


def trickle(server, stop, endings):
    """Sends a header a byte every half second (it would take half an hour)
    until told to stop or cut off; records how it ended: a status read, the
    socket error, or "unfinished" when it was never cut."""
    with connect(server) as connection:
        cut = False
        try:
            for byte in b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 4000:
                if stop.is_set():
                    break
                connection.sendall(bytes([byte]))
                time.sleep(0.5)
        except OSError:
            cut = True  # the server closed it; the 408 may still be there to read
        if not cut and stop.is_set():
            endings.append("unfinished")
            return
        try:
            endings.append(status_of(read_answer(connection)))
        except OSError as error:
            endings.append(type(error).__name__)


def check_slow_clients(checks, mlx_cpp, directory):
    # Liveness, not speed: every bound below is a timeout standing for
    # "never", far above what the answers take.
    with Server(mlx_cpp, directory, "--header-timeout", "3", "--max-queue", "2",
                "--quiet") as server:
        stop, endings = threading.Event(), []
        tricklers = [threading.Thread(target=trickle, args=(server, stop, endings))
                     for _ in range(60)]
        for thread in tricklers:
            thread.start()
        time.sleep(1.0)
        code, _ = server.request("GET", "/health", timeout=30)
        checks.check("60 slow clients (more than the workers): /health still answers", code == 200,
                     str(code))
        code, body = server.request("POST", "/v1/chat/completions", CHAT, timeout=120)
        checks.check("60 slow clients: a generation still answers", code == 200 and "choices" in body,
                     f"{code} {body[:200]}")
        for thread in tricklers:
            thread.join(60)  # each is cut at the 3 s header timeout, or stopped here
        stop.set()
        for thread in tricklers:
            thread.join(10)
        # A client still sending when it is closed may see a reset instead
        # of the 408 (its unread bytes make the kernel reset the socket).
        endings_seen = sorted(set(map(str, endings)))
        checks.check("every slow client is cut at the header timeout",
                     len(endings) == 60 and "unfinished" not in endings, str(endings_seen))
        checks.check("some of them read a 408", 408 in endings, str(endings_seen))


def check_connection_cap(checks, mlx_cpp, directory):
    with Server(mlx_cpp, directory, "--max-connections", "20", "--header-timeout", "30",
                "--quiet") as server:
        # Each held connection has had an answer, so the server has surely
        # accepted all of them before the extra one arrives (a loaded
        # machine may drop a handshake's last packet on loopback, and the
        # retried one would come after the extra connection).
        idle = [served_keep_alive(server, "127.0.0.1") for _ in range(20)]
        with connect(server) as extra:
            extra.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = read_answer(extra)
        checks.check("past --max-connections: 503 with an error body",
                     status_of(answer) == 503 and b'"error"' in answer, answer[:200])
        for connection in idle:
            connection.close()
        time.sleep(0.5)
        code, _ = server.request("GET", "/health", timeout=10)
        checks.check("the idle connections gone, it serves again", code == 200, str(code))


def connect_from(server, source):
    """A connection to the server from the loopback address `source`."""
    connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    connection.settimeout(30)
    connection.bind((source, 0))
    connection.connect(("127.0.0.1", server.port))
    return connection


def served_keep_alive(server, source):
    """A connection from `source` that has had one answer and stays open."""
    connection = connect_from(server, source)
    connection.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    received = b""
    while b"\r\n\r\n" not in received or not received.endswith(b"}"):
        piece = connection.recv(65536)
        if not piece:
            raise RuntimeError(f"the server closed a held connection: {received[:200]!r}")
        received += piece
    return connection


def check_per_client_cap(checks, mlx_cpp, directory):
    # Listening on every address, so that a second loopback address
    # (127.0.0.2) is a second client.
    with Server(mlx_cpp, directory, "--host", "0.0.0.0", "--max-connections-per-client", "5",
                "--header-timeout", "30", "--quiet") as server:
        # Each held connection first completes a keep-alive request, so the
        # server has surely accepted (and counted) it before the sixth comes,
        # however busy the machine.
        idle = [served_keep_alive(server, "127.0.0.1") for _ in range(5)]
        with connect_from(server, "127.0.0.1") as extra:
            extra.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = read_answer(extra)
        checks.check("past --max-connections-per-client: 429 with an error body",
                     status_of(answer) == 429 and b'"error"' in answer, answer[:200])
        with connect_from(server, "127.0.0.2") as other:
            other.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = read_answer(other)
        checks.check("another address is still served", status_of(answer) == 200, answer[:200])
        idle.pop().close()
        time.sleep(0.5)
        with connect_from(server, "127.0.0.1") as again:
            again.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = read_answer(again)
        checks.check("one of its connections closed, the address is served again",
                     status_of(answer) == 200, answer[:200])
        for connection in idle:
            connection.close()


def check_bodies(checks, server):
    chat = json.dumps(CHAT).encode()
    for encoding, packed in (("gzip", gzip.compress(chat)), ("deflate", zlib.compress(chat))):
        answer = raw_request(server, f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                             f"Content-Type: application/json\r\nContent-Encoding: {encoding}\r\n"
                             f"Content-Length: {len(packed)}\r\n\r\n", packed)
        checks.check(f"{encoding} body: 415", status_of(answer) == 415 and b"Content-Encoding" in answer,
                     answer[:200])
    # A 1 MB gzip body that inflates to 1 GiB is not inflated either.
    bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
    answer = raw_request(server, f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                         f"Content-Encoding: gzip\r\nContent-Length: {len(bomb)}\r\n\r\n", bomb)
    checks.check("gzip bomb: 415 without inflating", status_of(answer) == 415, answer[:200])

    # Chunked past the cap (64 KiB): 413 after at most the cap is read.
    sent = [0]
    with connect(server) as connection:
        connection.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                           b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"x" * 8192
        try:
            for _ in range(2048):  # 16 MiB offered
                connection.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent[0] += len(chunk)
        except OSError:
            pass
        answer = read_answer(connection)
    checks.check("chunked body past the cap: 413", status_of(answer) == 413, answer[:200])
    checks.check("chunked body past the cap: the rest is not read", sent[0] < 8 << 20,
                 f"{sent[0]} bytes sent")
    # A chunked body under the cap is served.
    body = json.dumps(CHAT).encode()
    answer = raw_request(server, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                         "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                         "Connection: close\r\n\r\n",
                         b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    checks.check("chunked body under the cap: 200", status_of(answer) == 200, answer[:300])
    # No length and no chunking: read to the end, but not past the cap.
    with connect(server) as connection:
        connection.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                           b"Content-Type: application/json\r\n\r\n")
        try:
            for _ in range(256):
                connection.sendall(b"y" * 65536)
        except OSError:
            pass
        answer = read_answer(connection)
    checks.check("body without a length past the cap: 413", status_of(answer) == 413, answer[:200])
    answer = raw_request(server, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                         "Content-Length: 1000000000000\r\n\r\n")
    checks.check("Content-Length beyond the cap: 413 before the body",
                 status_of(answer) == 413, answer[:200])
    answer = raw_request(server, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                         "Content-Length: 12abc\r\n\r\n")
    checks.check("malformed Content-Length: 400", status_of(answer) == 400, answer[:200])


def check_keep_alive(checks, server):
    body = json.dumps(CHAT)
    one = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\n\r\n{body}")
    with connect(server) as connection:
        answers = 0
        for _ in range(3):
            connection.sendall(one.encode())
            received = b""
            while b'"usage"' not in received:
                piece = connection.recv(65536)
                if not piece:
                    break
                received += piece
            answers += status_of(received) == 200
        checks.check("keep-alive: three requests on one connection", answers == 3, str(answers))
    # Two requests in one write: both answered, in order.
    last = one.replace("Host: x\r\n", "Host: x\r\nConnection: close\r\n")
    answer = raw_request(server, one + last)
    checks.check("pipelined requests: both answered", answer.count(b"HTTP/1.1 200") == 2,
                 answer[:300])


def check_shutdown_with_slow_clients(checks, mlx_cpp, directory):
    with Server(mlx_cpp, directory, "--header-timeout", "600", "--quiet") as server:
        held = [connect(server) for _ in range(30)]
        for connection in held:
            connection.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # never finished
        time.sleep(0.5)
        server.process.terminate()
        try:
            code = server.process.wait(60)  # their header timeout is 600 s
        except subprocess.TimeoutExpired:
            code = "still running 60 s after SIGTERM"
        checks.check("SIGTERM with 30 clients holding connections: exit 0", code == 0, str(code))
        for connection in held:
            connection.close()


def check_broken_template(checks, mlx_cpp, directory):
    with tempfile.NamedTemporaryFile("w", suffix=".jinja") as template:
        template.write("{% for m in messages %}{{ m.content + 1 }}{% endfor %}")
        template.flush()
        result = subprocess.run([mlx_cpp, "serve", "--model", directory, "--port", "0",
                                 "--chat-template-file", template.name],
                                capture_output=True, text=True, timeout=300)
    checks.check("a template that cannot render a user message: refused at load",
                 result.returncode != 0 and "cannot render a plain conversation" in result.stderr,
                 f"{result.returncode} {result.stderr[-300:]}")


# Prints nothing, but takes about 2^24 of the template budget's 2^25 steps
# (over a second here) whenever a message says "slow".
SLOW_TEMPLATE = """
{%- macro busy(n) %}{% if n > 0 %}{{ busy(n - 1) }}{{ busy(n - 1) }}{% endif %}{% endmacro %}
{%- for m in messages %}{% if m.content == 'slow' %}{{ busy(20) }}{% endif -%}
<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor -%}
{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"""


def check_render_stopped_when_client_leaves(checks, mlx_cpp, directory):
    with tempfile.NamedTemporaryFile("w", suffix=".jinja") as template:
        template.write(SLOW_TEMPLATE)
        template.flush()
        with Server(mlx_cpp, directory, "--chat-template-file", template.name) as server:
            body = json.dumps({"messages": [{"role": "user", "content": "slow"}],
                               "max_tokens": 4}).encode()
            with connect(server) as connection:
                connection.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                   b"Content-Type: application/json\r\nContent-Length: "
                                   + str(len(body)).encode() + b"\r\n\r\n" + body)
                time.sleep(0.2)  # the render has started; the client hangs up
            code, answer = server.request("POST", "/v1/chat/completions", CHAT, timeout=120)
            checks.check("the server answers after a client left during a slow render",
                         code == 200 and "choices" in answer, f"{code} {answer[:200]}")
            deadline = time.time() + 30  # the log is read on another thread
            while True:
                stopped = [line for line in server.log if "/v1/chat/completions" in line]
                if len(stopped) >= 2 or time.time() > deadline:
                    break
                time.sleep(0.1)
            checks.check("the slow render was stopped when its client hung up",
                         any("the render was stopped: the client closed the connection" in line
                             for line in stopped), "\n".join(stopped))


def main():
    mlx_cpp = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_MODEL
    directory = model_directory(mlx_cpp, name)
    checks = Checks()
    check_slow_clients(checks, mlx_cpp, directory)
    check_connection_cap(checks, mlx_cpp, directory)
    check_per_client_cap(checks, mlx_cpp, directory)
    with Server(mlx_cpp, directory, "--max-body-bytes", "65536", "--quiet") as server:
        check_bodies(checks, server)
        check_keep_alive(checks, server)
        code, body = server.request("POST", "/v1/chat/completions", CHAT)
        checks.check("serves after all of it", code == 200 and "choices" in body, f"{code}")
    check_shutdown_with_slow_clients(checks, mlx_cpp, directory)
    check_broken_template(checks, mlx_cpp, directory)
    check_render_stopped_when_client_leaves(checks, mlx_cpp, directory)
    checks.finish()


if __name__ == "__main__":
    main()
