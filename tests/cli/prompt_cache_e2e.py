#!/usr/bin/env python3
"""Prompt-cache files between mlx-cpp and mlx-lm on the default model, stock
kernels (and the fast path), greedy, in float and in 8-bit KV:

- `mlx-cpp cache-prompt` writes the tensors and metadata `mlx_lm cache_prompt`
  writes for the same prompt;
- `mlx-cpp generate --prompt-cache-file` continues mlx-lm's file with the
  text `mlx_lm generate --prompt-cache-file` gives, and mlx-lm continues
  mlx-cpp's file with it too;
- the fast path (own kernels, float16 keys) continues the same files;
- a damaged file, another model's file and a KV scheme the file contradicts
  each end the command with exit status 1 and a one-line reason."""
import subprocess
import sys
import tempfile
from pathlib import Path

import mlx.core as mx

BINARY = sys.argv[1]
PYTHON = sys.executable
PREAMBLE = ("You are a terse geography tutor. Answer every question in one short "
            "sentence, naming the country and its capital.")
QUESTION = " Which city is the capital of Canada?"
SCHEMES = {"float": [], "kv8": ["--kv-bits", "8", "--kv-group-size", "64",
                                 "--quantized-kv-start", "0"]}
failures = []


def run(command, expect_ok=True):
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if expect_ok and result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(command)}\n{result.stderr}")
    return result


def model_directory():
    return run([BINARY, "models", "--path", "smollm2-135m-instruct"]).stdout.strip()


def mlx_lm_text(stdout):
    # mlx_lm generate prints the text between two "==========" lines.
    return stdout.split("==========")[1].strip()


def check(condition, message):
    print(("ok: " if condition else "FAIL: ") + message)
    if not condition:
        failures.append(message)


model = model_directory()
with tempfile.TemporaryDirectory() as work:
    work = Path(work)
    for name, flags in SCHEMES.items():
        ours, theirs = work / f"ours_{name}.safetensors", work / f"theirs_{name}.safetensors"
        run([BINARY, "cache-prompt", "--model", model, "--kernels", "stock", "--prompt", PREAMBLE,
             "--out", str(ours)] + flags)
        run([PYTHON, "-m", "mlx_lm", "cache_prompt", "--model", model, "--prompt", PREAMBLE,
             "--prompt-cache-file", str(theirs)] + flags)
        our_arrays, our_metadata = mx.load(str(ours), return_metadata=True)
        their_arrays, their_metadata = mx.load(str(theirs), return_metadata=True)
        same = (our_metadata == their_metadata and set(our_arrays) == set(their_arrays) and all(
            our_arrays[k].dtype == their_arrays[k].dtype
            and our_arrays[k].shape == their_arrays[k].shape
            and mx.array_equal(our_arrays[k], their_arrays[k]).item() for k in their_arrays))
        check(same, f"{name}: cache-prompt writes mlx_lm cache_prompt's tensors and metadata")

        generate = [BINARY, "generate", "--kernels", "stock", "--max-tokens", "24",
                    "--prompt", QUESTION] + flags
        reference = mlx_lm_text(run([PYTHON, "-m", "mlx_lm", "generate", "--prompt-cache-file",
                                     str(theirs), "--prompt", QUESTION, "--max-tokens", "24"] +
                                    flags).stdout)
        from_theirs = run(generate + ["--prompt-cache-file", str(theirs)]).stdout.strip()
        check(from_theirs == reference,
              f"{name}: generate continues mlx-lm's file as mlx-lm does ({reference!r}, "
              f"ours {from_theirs!r})")
        mlx_lm_from_ours = mlx_lm_text(run([PYTHON, "-m", "mlx_lm", "generate",
                                            "--prompt-cache-file", str(ours), "--prompt", QUESTION,
                                            "--max-tokens", "24"] + flags).stdout)
        check(mlx_lm_from_ours == reference, f"{name}: mlx-lm continues mlx-cpp's file the same way")
        # The fast path keeps float16 keys: it takes the stock file cast.
        fast = [arg if arg != "stock" else "fast" for arg in generate]
        fast_text = run(fast + ["--prompt-cache-file", str(theirs)]).stdout.strip()
        check("Ottawa" in fast_text, f"{name}: the fast path continues it too ({fast_text!r})")

    # Bad files and mismatches: exit status 1 with the reason, no traceback.
    float_file = work / "ours_float.safetensors"
    damaged = work / "damaged.safetensors"
    damaged.write_bytes(float_file.read_bytes()[: float_file.stat().st_size // 3])
    result = run([BINARY, "generate", "--prompt-cache-file", str(damaged), "--prompt", QUESTION],
                 expect_ok=False)
    check(result.returncode == 1 and "damaged.safetensors" in result.stderr,
          f"a truncated file is refused: {result.stderr.strip()}")
    result = run([BINARY, "generate", "--model", "gemma3-270m", "--prompt-cache-file",
                  str(float_file), "--prompt", QUESTION], expect_ok=False)
    check(result.returncode == 1 and "made with model" in result.stderr,
          f"another model's file is refused: {result.stderr.strip()}")
    result = run([BINARY, "generate", "--prompt-cache-file", str(work / "ours_kv8.safetensors"),
                  "--prompt", QUESTION, "--kv-bits", "4"], expect_ok=False)
    check(result.returncode == 1 and "8 bits" in result.stderr,
          f"a KV scheme the file contradicts is refused: {result.stderr.strip()}")

if failures:
    sys.exit(f"FAIL: {len(failures)} check(s)")
print("ok: all checks")
