#!/usr/bin/env python3
"""Goldens for rotary embeddings: mlx-lm's initialize_rope for each variant,
its frequency table and its output on a random input at an offset."""
import argparse
import json
from pathlib import Path

import mlx.core as mx
from mlx_lm.models.rope_utils import initialize_rope

CASES = [
    dict(name="default", dims=32, head_dim=32, base=10000.0, traditional=False, scaling=None),
    dict(name="traditional", dims=32, head_dim=32, base=10000.0, traditional=True, scaling=None),
    dict(name="linear", dims=32, head_dim=32, base=10000.0, traditional=False,
         scaling=dict(type="linear", factor=2.0)),
    dict(name="llama3", dims=64, head_dim=64, base=500000.0, traditional=False,
         scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                      original_max_position_embeddings=64)),
    dict(name="yarn", dims=64, head_dim=64, base=10000.0, traditional=False,
         scaling=dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=256,
                      mscale=0.707, mscale_all_dim=1.0, beta_fast=32, beta_slow=1)),
    dict(name="yarn_partial", dims=32, head_dim=64, base=10000.0, traditional=False,
         scaling=dict(rope_type="yarn", factor=2.0, original_max_position_embeddings=128,
                      mscale=1.0, mscale_all_dim=0.5)),
    dict(name="longrope", dims=16, head_dim=16, base=10000.0, traditional=False,
         scaling=dict(type="longrope", original_max_position_embeddings=256,
                      short_factor=[1.0] * 8, long_factor=[1.0 + 0.25 * i for i in range(8)]),
         max_position_embeddings=1024),
    # Dynamic NTK: 5 tokens after offset 3 pass max_position_embeddings 6,
    # so the base grows; with 64 it stays.
    dict(name="dynamic", dims=32, head_dim=32, base=10000.0, traditional=False,
         scaling=dict(type="dynamic", factor=2.0), max_position_embeddings=6),
    dict(name="dynamic_short", dims=32, head_dim=32, base=10000.0, traditional=True,
         scaling=dict(rope_type="dynamic", factor=3.0), max_position_embeddings=64),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for index, case in enumerate(CASES):
        rope = initialize_rope(case["dims"], case["base"], case["traditional"], case["scaling"],
                               case.get("max_position_embeddings"))
        for dtype_name, dtype in (("f32", mx.float32), ("bf16", mx.bfloat16)):
            x = mx.random.normal((1, 2, 5, case["head_dim"]), key=mx.random.key(index)).astype(dtype)
            arrays[f"{case['name']}.{dtype_name}.x"] = x
            arrays[f"{case['name']}.{dtype_name}.out"] = rope(x, offset=3)
        if hasattr(rope, "_freqs"):
            arrays[f"{case['name']}.freqs"] = rope._freqs
    mx.eval(arrays)
    mx.save_safetensors(str(args.out / "rope.safetensors"), arrays)
    (args.out / "cases.json").write_text(json.dumps(CASES))


if __name__ == "__main__":
    main()
