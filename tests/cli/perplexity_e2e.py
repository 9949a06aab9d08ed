#!/usr/bin/env python3
"""Perplexity of the default model (its GGUF's Q4_1 weights carried exactly
into MLX 4-bit) on a fixed text of our own stays within 2% of the same GGUF
dequantized to a dense float32 model. Prints both numbers.

The dense reference runs the fast path: float32 weights go through an
optimized sgemm there, where the stock path's reference BLAS takes minutes
over the same windows (the stock path is held to mlx-lm bit for bit by
the parity tests; here it is the quantization that is measured)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

BINARY, TEXT, WORK = sys.argv[1], sys.argv[2], Path(sys.argv[3])
MODEL = "smollm2-135m-instruct"


def perplexity(model, kernels):
    run = subprocess.run([BINARY, "perplexity", "--model", model, "--file", TEXT, "--ctx", "512",
                          "--kernels", kernels], capture_output=True, text=True, timeout=1800)
    if run.returncode != 0:
        sys.exit(f"FAIL: perplexity on {model}: {run.stderr}")
    match = re.search(r"RESULT perplexity=([0-9.]+) nll=[0-9.]+ scored_tokens=(\d+)", run.stdout)
    return float(match.group(1)), int(match.group(2))


home = Path(os.environ.get("MLX_CPP_HOME", Path.home() / ".cache" / "mlx-cpp"))
gguf = json.loads((home / "registry.json").read_text())[MODEL]["gguf"]
dense = WORK / f"{MODEL}-f32"
if not (dense / "config.json").exists():
    subprocess.run([BINARY, "convert", "--gguf", gguf, "--out", str(dense), "--dtype", "f32"],
                   check=True, timeout=1800)
reference, scored = perplexity(str(dense), "fast")
print(f"float32 dense (fast): perplexity {reference:.4f} over {scored} tokens")
worst = 0.0
for kernels in ("fast",):  # the stock path is held to mlx-lm bit for bit elsewhere
    value, scored = perplexity(MODEL, kernels)
    relative = abs(value - reference) / reference
    worst = max(worst, relative)
    print(f"4-bit ({kernels}): perplexity {value:.4f} over {scored} tokens, {100 * relative:.2f}% from float32")
if worst > 0.02:
    sys.exit(f"FAIL: 4-bit perplexity differs from float32 by {100 * worst:.2f}% (> 2%)")
print("ok: within 2%")
