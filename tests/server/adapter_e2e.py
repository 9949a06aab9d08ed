#!/usr/bin/env python3
"""Adapters served, end to end on the default model: two adapters made with
mlx-lm's classes (random factors in place of trained ones). The answers
held to mlx-lm's come from a server on the stock kernels; the rest runs on
the fast kernels.

- serve --adapter NAME=DIR mounts at start; a request's "adapter" field
  and "model": "<model>:<adapter>" both choose it, and the answer is the
  text `mlx_lm generate --adapter-path` writes; without one, the base
  model answers;
- GET /v1/adapters lists the mounted ones, /v1/models lists them as
  models, GET /v1/adapters/available lists --adapter-dir;
- POST /v1/adapters mounts one at runtime, a stack "a+b" runs, DELETE
  unmounts it: later requests naming it get 404, a second DELETE 404;
- 12 concurrent clients on base / a / b / a+b get, each, the answer the
  same request gets alone (rows with different adapters share batches);
- an unknown adapter is 404, a malformed choice 400, a mount of a bad
  directory 400 with the reason, and all of it is behind the API key.
"""
import concurrent.futures
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import mlx.core as mx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "oracle"))
import lora_goldens  # noqa: E402
from server_process import Checks, Server, model_directory  # noqa: E402

BINARY = sys.argv[1]
MODEL = model_directory(BINARY)
KEY = {"Authorization": "Bearer secret"}
QUESTION = "Name three colours of the rainbow."
TOKENS = 16
checks = Checks()


def chat(server, extra, question=QUESTION, headers=KEY):
    body = {"messages": [{"role": "user", "content": question}], "max_tokens": TOKENS,
            "temperature": 0, **extra}
    status, text = server.request("POST", "/v1/chat/completions", body, headers=headers)
    if status != 200:
        return status, text
    return status, json.loads(text)["choices"][0]["message"]["content"]


def mlx_lm_answer(adapter):
    result = subprocess.run([sys.executable, "-m", "mlx_lm", "generate", "--model", MODEL,
                             "--adapter-path", str(adapter), "--prompt", QUESTION, "--max-tokens",
                             str(TOKENS)], capture_output=True, text=True, check=True)
    return result.stdout.split("==========")[1].strip()


def get(server, path, headers=KEY):
    status, text = server.request("GET", path, headers=headers)
    return status, json.loads(text) if status == 200 else text


with tempfile.TemporaryDirectory() as work:
    work = Path(work)
    library = work / "library"
    spec = dict(fine_tune_type="lora", num_layers=8,
                lora_parameters=dict(rank=8, scale=4.0, dropout=0.0), dtype=mx.float32)
    lora_goldens.write_adapter(Path(MODEL), work / "first", spec, seed=11)
    lora_goldens.write_adapter(Path(MODEL), library / "second", spec, seed=12)
    (library / "broken").mkdir()
    (library / "broken" / "adapter_config.json").write_text("{not json")
    (library / "broken" / "adapters.safetensors").write_bytes(b"")

    arguments = ["--api-key", "secret", "--adapter", f"first={work / 'first'}",
                 "--adapter-dir", str(library)]
    # The stock kernels answer as mlx-lm does; the rest runs on the fast
    # kernels, whose rows batched are bit for bit their requests alone too.
    with Server(BINARY, MODEL, "--kernels", "stock", *arguments) as server:
        model_id = get(server, "/v1/models")[1]["data"][0]["id"]
        base = chat(server, {})[1]
        first = chat(server, {"adapter": "first"})
        checks.check("adapter field answers as mlx_lm --adapter-path",
                     first == (200, mlx_lm_answer(work / "first")), str(first))
        checks.check("the adapter changes the answer", first[1] != base)
        checks.check("model <model>:<adapter> chooses it",
                     chat(server, {"model": f"{model_id}:first"}) == first)
        checks.check("another model name with a colon is the base model",
                     chat(server, {"model": "some:name"}) == (200, base))

    with Server(BINARY, MODEL, *arguments) as server:
        first = chat(server, {"adapter": "first"})
        status, listed = get(server, "/v1/adapters")
        checks.check("GET /v1/adapters lists the mounted adapter",
                     status == 200 and [a["id"] for a in listed["data"]] == ["first"], str(listed))
        models = [m["id"] for m in get(server, "/v1/models")[1]["data"]]
        checks.check("/v1/models lists <model>:<adapter>", f"{model_id}:first" in models, models)
        status, available = get(server, "/v1/adapters/available")
        names = {a["name"]: a for a in available["data"]} if status == 200 else {}
        checks.check("available lists the library, a broken one with its error",
                     set(names) == {"second", "broken"} and "error" in names["broken"] and
                     names["second"]["mounted"] is False, str(available))

        status, text = server.request("POST", "/v1/adapters", {"name": "second"}, headers=KEY)
        checks.check("POST /v1/adapters mounts from the library", status == 201, text)
        status, text = server.request("POST", "/v1/adapters", {"name": "second"}, headers=KEY)
        checks.check("mounting a name twice is refused", status == 400, text)
        status, text = server.request("POST", "/v1/adapters", {"name": "broken"}, headers=KEY)
        checks.check("mounting a broken directory is 400 with the reason",
                     status == 400 and "adapter_config.json" in text, text)
        second = chat(server, {"adapter": "second"})[1]
        stacked = chat(server, {"adapter": "first+second"})
        listed_stack = chat(server, {"adapter": ["first", {"name": "second", "scale": 1.0}]})
        checks.check("a stack runs and differs from each part",
                     stacked[0] == 200 and stacked[1] not in (first[1], second), str(stacked))
        checks.check("a listed stack equals the same stack as text", listed_stack == stacked)

        # Concurrent clients with different adapters share batches: each
        # answer is the one its request gets alone.
        choices = [{}, {"adapter": "first"}, {"adapter": "second"}, {"adapter": "first+second"}]
        questions = [f"Say something about the number {n}." for n in range(3)]
        alone = {(c, q): chat(server, choices[c], questions[q]) for c in range(4)
                 for q in range(3)}
        checks.check("every request alone is answered",
                     all(status == 200 for status, _ in alone.values()), str(alone))
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            together = dict(zip(alone, pool.map(
                lambda key: chat(server, choices[key[0]], questions[key[1]]), alone)))
        differing = {key: (alone[key], together[key]) for key in alone
                     if alone[key] != together[key]}
        checks.check("12 concurrent clients on 4 adapter stacks answer as alone",
                     not differing, str(differing))

        status, text = server.request("DELETE", "/v1/adapters/second", headers=KEY)
        checks.check("DELETE unmounts", status == 200 and json.loads(text)["deleted"], text)
        status, text = chat(server, {"adapter": "second"})
        checks.check("a request naming an unmounted adapter is 404", status == 404, text)
        status, text = server.request("DELETE", "/v1/adapters/second", headers=KEY)
        checks.check("a second DELETE is 404", status == 404, text)
        for bad in [{"adapter": 5}, {"adapter": "a++b"}, {"adapter": [{"scale": 1}]},
                    {"adapter": "first", "model": f"{model_id}:first"}]:
            status, text = chat(server, bad)
            checks.check(f"malformed choice {bad} is 400", status == 400, text)
        status, text = server.request("POST", "/v1/adapters",
                                      {"name": "x", "path": "../first"}, headers=KEY)
        checks.check("a relative path out of the library is refused", status == 400, text)
        for method, path in [("GET", "/v1/adapters"), ("GET", "/v1/adapters/available"),
                             ("DELETE", "/v1/adapters/first")]:
            status, _ = server.request(method, path)
            checks.check(f"{method} {path} needs the API key", status == 401)
        checks.check("first still mounted after the unauthorised DELETE",
                     [a["id"] for a in get(server, "/v1/adapters")[1]["data"]] == ["first"])
checks.finish()
