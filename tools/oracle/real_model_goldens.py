#!/usr/bin/env python3
"""Goldens on real (converted) models: mlx-lm loads each model directory,
tokenizes fixed prompts with its own tokenizer, and records the logits of its
generation loop (greedy) and of a full forward, plus the greedy text. The
C++ side must reproduce every logit bit for bit on the stock path, the
token ids of its own tokenizer, and the text. A model of more than
LARGE_BYTES of weights gets the first prompt only: MLX's CPU matmuls take
seconds per token there, and the other prompts exercise nothing the small
models' do not."""
import argparse
import json
from pathlib import Path

import mlx.core as mx
from mlx_lm.generate import generate_step
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.utils import load

PROMPTS = {
    "capital": "The capital of France is",
    "code": "def fibonacci(n):\n    ",
    "story": "Once upon a time, in a small village by the sea, there lived",
}
STEPS = 12
LARGE_BYTES = 1 << 30


def prompts_for(directory):
    weights = sum(f.stat().st_size for f in Path(directory).glob("*.safetensors"))
    if weights > LARGE_BYTES:
        first = next(iter(PROMPTS))
        return {first: PROMPTS[first]}
    return PROMPTS


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--model-dir", action="append", default=[], type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    index = []
    for directory in args.model_dir:
        model, tokenizer = load(str(directory))
        name = directory.name
        arrays, goldens = {}, {"model_dir": str(directory), "prompts": {}}
        for key, text in prompts_for(directory).items():
            ids = tokenizer.encode(text)
            recorded = []

            def recorder(tokens, logits):
                recorded.append(logits)
                return logits

            tokens = [int(t) for t, _ in generate_step(mx.array(ids), model, max_tokens=STEPS,
                                                       logits_processors=[recorder])]
            arrays[f"{key}.generation"] = mx.concatenate(recorded, axis=0)
            full = model(mx.array(ids)[None], cache=make_prompt_cache(model))
            arrays[f"{key}.forward"] = full[0]
            goldens["prompts"][key] = {"text": text, "ids": ids, "greedy": tokens,
                                       "greedy_text": tokenizer.decode(tokens)}
        mx.eval(arrays)
        mx.save_safetensors(str(args.out / f"{name}.safetensors"), arrays)
        (args.out / f"{name}.json").write_text(json.dumps(goldens))
        index.append(name)
        print(name, {k: v["greedy_text"] for k, v in goldens["prompts"].items()}, flush=True)
    (args.out / "index.json").write_text(json.dumps(index))


if __name__ == "__main__":
    main()
