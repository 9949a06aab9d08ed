#!/usr/bin/env python3
"""`mlx-cpp chat` end to end on the default model: from a pipe (one message
per line, /reset), in a pseudo-terminal (Ctrl-C stops an answer but not
the program, /exit quits), and with a chat template that opens a think
block (reasoning shown apart, a budget ends it, the next turn carries the
answer alone). Exits non-zero on the first failed check."""
import os
import pty
import select
import subprocess
import sys
import tempfile
import time

BINARY = sys.argv[1]
MODEL = "smollm2-135m-instruct"


def check(condition, message):
    if not condition:
        sys.exit(f"FAIL: {message}")
    print(f"ok: {message}")


def pipe_mode():
    script = "What is the capital of France?\nAnd of Germany?\n/reset\nWhat is the capital of France?\n"
    run = subprocess.run([BINARY, "chat", "--model", MODEL, "--max-tokens", "24"], input=script,
                         capture_output=True, text=True, timeout=600)
    check(run.returncode == 0, f"pipe chat exits 0 (stderr: {run.stderr[-300:]})")
    check("Paris" in run.stdout, "first answer names Paris")
    check("Berlin" in run.stdout, "second answer uses the conversation (Berlin)")
    answers = [line for line in run.stdout.splitlines() if line.strip()]
    check(len(answers) == 3 and answers[2] == answers[0],
          f"after /reset the same question gets the first answer again ({answers})")
    stats = [line for line in run.stderr.splitlines() if line.startswith("[prompt:")]
    check(len(stats) == 3, "one stats line per turn")
    cached = [int(line.split("+ ")[1].split(" cached")[0]) for line in stats]
    check(cached[0] == 0 and cached[1] > 20, f"second turn reuses the cache ({cached})")
    check(cached[2] < cached[1], f"/reset starts a new conversation ({cached})")


def read_until(fd, needle, timeout):
    data = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
            if needle in data:
                return data
    return data


def terminal_mode():
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(BINARY, [BINARY, "chat", "--model", MODEL, "--max-tokens", "2000"])
    banner = read_until(fd, b">>> ", 300)
    check(b">>> " in banner, "interactive prompt appears in a terminal")
    os.write(fd, b"Count from 1 to 500, one number per line.\r")
    streamed = read_until(fd, b"12", 300)
    check(b"12" in streamed, "answer streams token by token")
    os.write(fd, b"\x03")  # Ctrl-C
    after = read_until(fd, b">>> ", 120)
    check(b"[stopped]" in after, "Ctrl-C stops the answer")
    check(b">>> " in after, "and the chat goes on")
    os.write(fd, b"/exit\r")
    _, status = os.waitpid(pid, 0)
    check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "/exit ends with status 0")


THINKING_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['role'] == 'assistant' and message.get('reasoning_content') %}"
    "{{ '<think>\\n' + message['reasoning_content'] + '\\n</think>\\n\\n' }}{% endif %}"
    "{{ message['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{% endif %}")


def thinking_mode():
    with tempfile.NamedTemporaryFile("w", suffix=".jinja") as template:
        template.write(THINKING_TEMPLATE)
        template.flush()
        script = "Write a story about a cat.\nAnd about a dog?\n"
        run = subprocess.run([BINARY, "chat", "--model", MODEL, "--max-tokens", "24",
                              "--chat-template-file", template.name, "--reasoning-budget", "6"],
                             input=script, capture_output=True, text=True, timeout=600)
    check(run.returncode == 0, f"thinking chat exits 0 (stderr: {run.stderr[-300:]})")
    turns = run.stdout.split("[thinking]\n")[1:]
    check(len(turns) == 2, f"each answer starts with its reasoning ({run.stdout!r})")
    for turn in turns:
        reasoning, _, content = turn.partition("\n[/thinking]\n")
        check(reasoning.strip() and content.strip() and "</think>" not in turn,
              f"the budget closes the block and the answer follows apart ({turn!r})")


if __name__ == "__main__":
    pipe_mode()
    terminal_mode()
    thinking_mode()
