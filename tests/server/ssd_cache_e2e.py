#!/usr/bin/env python3
"""The SSD cache under the server's prefix cache, on the default model:

- entries written by one server answer the next one's requests (hits,
  after a restart), with the answers an uncached server gives;
- kill -9 at random moments while the cache is being written, many times:
  after each restart no file in the folder fails its seal (checked here,
  independently of the server), nothing half written is left, no entry is
  rejected, and answers still equal the uncached ones;
- POST /admin/cache/flush writes what memory holds, behind the API key;
- a full disk (a small tmpfs) leaves the server answering, from memory,
  with a warning and write failures counted, never an abort.
"""
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_process import Checks, Server, model_directory  # noqa: E402

BINARY = sys.argv[1]
MODEL = model_directory(BINARY)
PREAMBLE = ("You are the support assistant of a hardware shop. Policies: returns within 30 days "
            "with a receipt; repairs take five working days; opening hours are nine to six. ") * 4
QUESTIONS = [f"Question {n}: can I return item number {n * 7} after {n + 20} days?"
             for n in range(24)]
checks = Checks()
random.seed(7)


cached_tokens = []  # per answer, as the server reported them


def ask(server, question, headers=None, max_tokens=10):
    status, body = server.request("POST", "/v1/chat/completions", {
        "messages": [{"role": "system", "content": PREAMBLE},
                     {"role": "user", "content": question}],
        "max_tokens": max_tokens, "temperature": 0}, headers=headers)
    if status != 200:
        raise RuntimeError(f"{status}: {body}")
    answer = json.loads(body)
    cached_tokens.append(answer["usage"]["prompt_tokens_details"]["cached_tokens"])
    return answer["choices"][0]["message"]["content"]


def stats(server, headers=None):
    return json.loads(server.request("GET", "/stats", headers=headers)[1])["ssd_cache"]


def seal_holds(path):
    """The server's seal, recomputed: SHA-256 of the header without the seal
    (JSON, sorted keys, compact) and the data section."""
    data = path.read_bytes()
    if len(data) < 8:
        return False
    length = int.from_bytes(data[:8], "little")
    try:
        header = json.loads(data[8:8 + length])
        metadata = header["__metadata__"]
        seal = metadata.pop("0.mlx_cpp_seal")
    except (ValueError, KeyError):
        return False
    if not metadata:
        del header["__metadata__"]
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode() + data[8 + length:]).hexdigest() == seal


def cache_files(folder):
    return [p for p in Path(folder).rglob("*") if p.is_file()]


def serve_args(folder, *extra):
    # A prefix cache too small to hold anything: every entry goes to disk.
    return ["--ssd-cache", str(folder), "--prompt-cache-bytes", "1", *extra]


with Server(BINARY, MODEL, "--prompt-cache-bytes", "0") as plain:
    reference = {q: ask(plain, q) for q in QUESTIONS}

work = Path(tempfile.mkdtemp(prefix="mlx-cpp-ssd-e2e-"))
try:
    folder = work / "cache"
    with Server(BINARY, MODEL, *serve_args(folder)) as first:
        answers = [ask(first, q) == reference[q] for q in QUESTIONS[:4]]
        checks.check("answers with the SSD cache equal uncached ones", all(answers))
        # The second time, the preamble comes from disk.
        del cached_tokens[:]
        again = [ask(first, q) == reference[q] for q in QUESTIONS[:4]]
        checks.check("answers from disk equal uncached ones", all(again))
        checks.check("each was served from disk (cached tokens)", min(cached_tokens) > 100,
                     str(cached_tokens))
        checks.check("hits counted", stats(first)["hits"] >= 1, str(stats(first)))
    with Server(BINARY, MODEL, *serve_args(folder)) as second:
        before = stats(second)
        checks.check("a restart finds the files", before["files"] >= 1, str(before))
        del cached_tokens[:]
        restarted = [ask(second, q) == reference[q] for q in QUESTIONS[:4]]
        checks.check("after a restart, answers from disk equal uncached ones", all(restarted))
        checks.check("after a restart, each was served from disk", min(cached_tokens) > 100,
                     str(cached_tokens))
        checks.check("after a restart, hits", stats(second)["hits"] >= 1, str(stats(second)))

    # kill -9 while the cache is being written, again and again.
    killed_folder = work / "killed"
    interrupted = 0  # kills that caught a write half done
    for round_number in range(8):
        # Each write pauses halfway for 300 ms (MLX_CPP_SSD_WRITE_PAUSE_MS),
        # so kills land inside writes as well as between them.
        os.environ["MLX_CPP_SSD_WRITE_PAUSE_MS"] = "300"
        server = Server(BINARY, MODEL, *serve_args(killed_folder))
        server.__enter__()
        del os.environ["MLX_CPP_SSD_WRITE_PAUSE_MS"]
        # Four clients at once: entries leave memory (and are written)
        # back to back.
        def keep_asking(questions):
            for question in questions:
                try:
                    ask(server, question, max_tokens=1)
                except Exception:  # the server was killed under it
                    return

        askers = [threading.Thread(target=keep_asking, args=(random.sample(QUESTIONS, 6),))
                  for _ in range(4)]
        for asker in askers:
            asker.start()
        time.sleep(random.uniform(0.5, 4.0))
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
        for asker in askers:
            asker.join()
        server.reader.join(10)
        interrupted += any(f.name.startswith(".") for f in cache_files(killed_folder))
    checks.check(f"kills landed inside writes ({interrupted} of 8)", interrupted >= 2)
    with Server(BINARY, MODEL, *serve_args(killed_folder)) as survivor:
        after = stats(survivor)
        files = cache_files(killed_folder)
        half = [f for f in files if f.name.startswith(".")]
        broken = [f for f in files if not f.name.startswith(".") and not seal_holds(f)]
        checks.check("after 8 kills: nothing half written is left", not half, str(half))
        checks.check("after 8 kills: every file holds its seal", not broken, str(broken))
        checks.check("after 8 kills: files survive", after["files"] >= 1, str(after))
        del cached_tokens[:]
        survived = [ask(survivor, q) == reference[q] for q in QUESTIONS[:8]]
        checks.check("after 8 kills: the files serve", max(cached_tokens) > 100,
                     str(cached_tokens))
        checks.check("after 8 kills: answers equal uncached ones", all(survived))
        checks.check("after 8 kills: no entry rejected", stats(survivor)["rejected"] == 0,
                     str(stats(survivor)))

    # POST /admin/cache/flush: what memory holds goes to disk, behind the key.
    flush_folder = work / "flush"
    key = {"Authorization": "Bearer secret"}
    with Server(BINARY, MODEL, "--ssd-cache", str(flush_folder), "--api-key", "secret") as keyed:
        ask(keyed, QUESTIONS[0], headers=key)
        status, _ = keyed.request("POST", "/admin/cache/flush")
        checks.check("flush needs the API key", status == 401, str(status))
        status, body = keyed.request("POST", "/admin/cache/flush", headers=key)
        checks.check("flush writes memory's entries", status == 200 and
                     json.loads(body)["ssd_cache"]["files"] >= 1, f"{status} {body}")
    with Server(BINARY, MODEL, "--prompt-cache-bytes", "0") as no_tier:
        status, _ = no_tier.request("POST", "/admin/cache/flush")
        checks.check("flush without an SSD cache is a 400", status == 400, str(status))

    # A full disk: a tmpfs far smaller than one entry.
    full = work / "full"
    full.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(full)],
                             capture_output=True).returncode == 0
    if not mounted:
        print("note  full-disk check not run: mounting a tmpfs needs root")
    else:
        try:
            with Server(BINARY, MODEL, *serve_args(full)) as cramped:
                answered = [ask(cramped, q) == reference[q] for q in QUESTIONS[:3]]
                failures = stats(cramped)["write_failures"]
            checks.check("full disk: answers go on", all(answered))
            checks.check("full disk: write failures counted", failures >= 1, str(failures))
            checks.check("full disk: a warning in the log",
                         any("SSD cache" in line for line in cramped.log), "\n".join(cramped.log[-5:]))
        finally:
            subprocess.run(["umount", str(full)])
finally:
    shutil.rmtree(work, ignore_errors=True)
checks.finish()
