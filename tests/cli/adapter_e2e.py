#!/usr/bin/env python3
"""Adapters between mlx-cpp and mlx-lm on the default model, stock kernels,
greedy: a LoRA and a DoRA adapter made with mlx-lm's own classes (random
factors in place of trained ones):

- `mlx-cpp generate --adapter` writes the text `mlx_lm generate
  --adapter-path` writes, and it differs from the base model's;
- `mlx-cpp fuse` writes the tensors `mlx_lm fuse` writes, bit for bit, and
  both tools load and answer alike from either fused model;
- two adapters given twice are stacked; the fast path runs them too;
- a missing directory, a config with "alpha" instead of "scale", tensors of
  the wrong shape and a fuse into a non-empty directory each end the
  command with exit status 1 and a one-line reason."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import mlx.core as mx

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "oracle"))
import lora_goldens  # noqa: E402  (mlx-lm's adapter directories with random factors)

BINARY = sys.argv[1]
PYTHON = sys.executable
PROMPT = "Name three colours of the rainbow."
TOKENS = "24"
failures = []


def run(command, expect_ok=True):
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if expect_ok and result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(command)}\n{result.stderr}")
    return result


def check(condition, message):
    print(("ok: " if condition else "FAIL: ") + message)
    if not condition:
        failures.append(message)


def mlx_lm_text(stdout):
    return stdout.split("==========")[1].strip()


def ours(model, *flags):
    result = run([BINARY, "generate", "--model", model, "--kernels", "stock", "--prompt", PROMPT,
                  "--max-tokens", TOKENS] + list(flags))
    return result.stdout.strip()


def theirs(model, *flags):
    return mlx_lm_text(run([PYTHON, "-m", "mlx_lm", "generate", "--model", model, "--prompt",
                            PROMPT, "--max-tokens", TOKENS] + list(flags)).stdout)


def refused(command, words):
    result = run(command, expect_ok=False)
    lines = result.stderr.strip().splitlines()
    return (result.returncode == 1 and len(lines) == 1 and words in lines[0]), result.stderr


model = run([BINARY, "models", "--path", "smollm2-135m-instruct"]).stdout.strip()
SPECS = {
    "lora": dict(fine_tune_type="lora", num_layers=8,
                 lora_parameters=dict(rank=8, scale=4.0, dropout=0.0), dtype=mx.float32),
    "dora": dict(fine_tune_type="dora", num_layers=4,
                 lora_parameters=dict(rank=4, scale=10.0, dropout=0.0,
                                      keys=["self_attn.q_proj", "self_attn.v_proj"]),
                 dtype=mx.float32),
}
with tempfile.TemporaryDirectory() as work:
    work = Path(work)
    for index, (name, spec) in enumerate(SPECS.items()):
        lora_goldens.write_adapter(Path(model), work / name, spec, seed=7 + index)
    base = ours(model)
    answers = {}
    for name in SPECS:
        adapter = str(work / name)
        text = answers[name] = ours(model, "--adapter", adapter)
        check(text == theirs(model, "--adapter-path", adapter),
              f"{name}: generate --adapter writes mlx_lm's text ({text!r})")
        check(text != base, f"{name}: the adapter changes the answer")
        run([PYTHON, "-m", "mlx_lm", "fuse", "--model", model, "--adapter-path", adapter,
             "--save-path", str(work / f"{name}_fused_theirs")])
        fused = work / f"{name}_fused_ours"
        run([BINARY, "fuse", "--model", model, "--adapter-path", adapter, "--save-path",
             str(fused)])
        mine = mx.load(str(fused / "model.safetensors"))
        reference = mx.load(str(work / f"{name}_fused_theirs" / "model.safetensors"))
        same = mine.keys() == reference.keys() and all(
            mine[k].dtype == reference[k].dtype and mx.array_equal(mine[k], reference[k]).item()
            for k in reference)
        check(same, f"{name}: fuse writes mlx_lm fuse's {len(reference)} tensors bit for bit")
        # Fusing rounds W + delta to the weights' dtype: the fused model's
        # answer is its own, the same whichever tool fused it and ran it.
        fused_text = theirs(str(work / f"{name}_fused_theirs"))
        check(theirs(str(fused)) == fused_text and ours(str(fused)) == fused_text,
              f"{name}: mlx-lm and mlx-cpp answer alike from either fused model")
    stacked = ours(model, "--adapter", str(work / "lora"), "--adapter", str(work / "lora"))
    check(stacked not in (base, answers["lora"]),
          "an adapter given twice is stacked (its update added twice)")
    fast = run([BINARY, "generate", "--model", model, "--prompt", PROMPT, "--max-tokens", TOKENS,
                "--adapter", str(work / "lora")])
    check(fast.returncode == 0 and fast.stdout.strip() != "", "the fast path runs an adapter")

    bad = work / "alpha"
    bad.mkdir()
    (bad / "adapter_config.json").write_text(json.dumps(
        {"fine_tune_type": "lora", "num_layers": 8, "lora_parameters": {"rank": 8, "alpha": 16}}))
    (bad / "adapters.safetensors").write_bytes((work / "lora" / "adapters.safetensors").read_bytes())
    wrong = work / "wrong_shape"
    wrong.mkdir()
    (wrong / "adapter_config.json").write_text((work / "lora" / "adapter_config.json").read_text())
    tensors = mx.load(str(work / "lora" / "adapters.safetensors"))
    first = sorted(tensors)[0]
    tensors[first] = mx.zeros((3, 3))
    mx.save_safetensors(str(wrong / "adapters.safetensors"), tensors)
    for directory, words in [(work / "missing", "does not exist"), (bad, "alpha"),
                             (wrong, "has shape")]:
        ok, stderr = refused([BINARY, "generate", "--model", model, "--prompt", PROMPT,
                              "--adapter", str(directory)], words)
        check(ok, f"{directory.name}: refused with one line ({stderr.strip()!r})")
    ok, stderr = refused([BINARY, "fuse", "--model", model, "--adapter-path", str(work / "lora"),
                          "--save-path", str(work / "lora_fused_ours")], "not empty")
    check(ok, f"fuse into a non-empty directory refused ({stderr.strip()!r})")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all adapter checks passed")
