#!/usr/bin/env python3
"""`mlx-cpp lora` end to end on the tiny llama of the lora_training oracle
(SmolLM2's tokenizer and template):

- `--train` writes adapter_config.json, adapters.safetensors and the
  checkpoints, prints a line per report and validation;
- mlx-lm loads the adapter mlx-cpp trained (load(..., adapter_path=...))
  and its logits with it are the ones `mlx-cpp generate --adapter` gets;
- `--test` prints the test loss and perplexity;
- a malformed line, a missing train.jsonl and records of no known format
  each end the command with exit status 1 and a one-line reason.

usage: lora_e2e.py MLX_CPP_BINARY GOLDENS_DIR"""
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import mlx.core as mx
from mlx_lm.generate import generate_step
from mlx_lm.utils import load

BINARY, GOLDENS = sys.argv[1], Path(sys.argv[2]) / "lora_training"
MODEL = GOLDENS / "model"
failures = []


def check(condition, message):
    print(("ok: " if condition else "FAIL: ") + message)
    if not condition:
        failures.append(message)


def run(*args):
    return subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True,
                          timeout=1800)


with tempfile.TemporaryDirectory() as work:
    work = Path(work)
    data = work / "data"
    shutil.copytree(GOLDENS / "data" / "chat", data)
    (data / "test.jsonl").write_text((data / "valid.jsonl").read_text())
    adapter = work / "adapter"
    result = run("lora", "--train", "--test", "--model", MODEL, "--data", data, "--iters", 4,
                 "--batch-size", 2, "--num-layers", 2, "--learning-rate", "1e-3",
                 "--steps-per-report", 2, "--steps-per-eval", 2, "--val-batches", 1,
                 "--save-every", 2, "--adapter-path", adapter)
    check(result.returncode == 0, f"lora --train --test runs ({result.stderr[-300:]!r})")
    lines = result.stdout.splitlines()
    check(sum("Train loss" in line for line in lines) == 2, "a line per report")
    check(sum("Val loss" in line for line in lines) == 3, "validation at 1, 2 and 4")
    check(any(line.startswith("Test loss") and "Test ppl" in line for line in lines),
          "--test prints the test loss and perplexity")
    check(all((adapter / name).exists() for name in
              ("adapter_config.json", "adapters.safetensors", "0000002_adapters.safetensors",
               "0000004_adapters.safetensors")), "the adapter directory and its checkpoints")

    # mlx-lm loads what mlx-cpp trained, and agrees with mlx-cpp's logits.
    model, tokenizer = load(str(MODEL), adapter_path=str(adapter))
    prompt = tokenizer.encode("What is the capital city called Paris?")
    theirs = [int(t) for t, _ in generate_step(mx.array(prompt), model, max_tokens=6)]
    ours = run("generate", "--model", MODEL, "--adapter", adapter, "--kernels", "stock", "--raw",
               "--prompt", "What is the capital city called Paris?", "--max-tokens", 6)
    check(ours.returncode == 0 and tokenizer.decode(theirs) == ours.stdout.rstrip("\n"),
          f"mlx-lm generates with the trained adapter what mlx-cpp does "
          f"({tokenizer.decode(theirs)!r} vs {ours.stdout.rstrip()!r})")

    for name, content in [("malformed", '{"text": "a"}\n{not json\n'),
                          ("unknown", '{"question": "a"}\n{"question": "b"}\n')]:
        folder = work / name
        folder.mkdir()
        (folder / "train.jsonl").write_text(content)
        bad = run("lora", "--train", "--model", MODEL, "--data", folder, "--iters", 1,
                  "--adapter-path", work / f"{name}_adapter")
        check(bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1 and
              "train.jsonl" in bad.stderr, f"{name} data refused in one line ({bad.stderr!r})")
    empty = work / "empty"
    empty.mkdir()
    bad = run("lora", "--train", "--model", MODEL, "--data", empty, "--iters", 1)
    check(bad.returncode == 1 and "train.jsonl" in bad.stderr,
          f"a missing train.jsonl refused ({bad.stderr!r})")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all lora checks passed")
