#!/usr/bin/env python3
"""Goldens for quantized KV caches, produced by mlx-lm's own generate_step
with kv_bits (QuantizedKVCache, quantized_scaled_dot_product_attention).

For every architecture of model_goldens x {bf16 (float32 for a mixture of
experts), q4} this builds a tiny random checkpoint with mlx-lm's classes, as
model_goldens does, but with 64-wide heads (two query heads sharing one key
head): MLX quantizes along the head dimension in groups of 32 or more, which
model_goldens' 16-wide heads cannot hold. Each scheme below runs greedily
and records every step's logits and tokens.

Two things mlx-lm's loop does not do are added the way mlx-cpp does them,
with mlx-lm's own classes: sliding-window layers stay in float (mlx-lm's
RotatingKVCache.to_quantized raises NotImplementedError), and a scheme may
keep some layers in float (mlx-cpp's --kv-float-layers). A model whose
attention cannot read a quantized cache (mlx-lm raises) is recorded as
refused; mlx-cpp must refuse it too.

Prompt-cache files too: the first PREFIX_LENGTH prompt tokens prefilled by
generate_step(max_tokens=0) (as mlx_lm.cache_prompt does) and saved by
save_prompt_cache, in float and quantized; then load_prompt_cache and
generate_step continue with the rest of the prompt, their logits recorded
(as mlx_lm.generate --prompt-cache-file continues).

Writes --out/<case>/model, goldens.json, logits.safetensors and
prompt_cache_<scheme>.safetensors (with prompt_cache_logits.safetensors),
plus manifest.json. Goldens are machine-specific: generated where they are
checked, never committed.
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

import mlx.core as mx
from mlx_lm.generate import generate_step
from mlx_lm.models.cache import (RotatingKVCache, load_prompt_cache, make_prompt_cache,
                                 save_prompt_cache)
from mlx_lm.utils import load_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_goldens  # noqa: E402  (the checkpoints' architectures and weights)

# The module itself: mlx_lm's package exports a function under the same name.
mlx_generate = sys.modules["mlx_lm.generate"]

STEPS = 8
PROMPT_LENGTH = 41
# name: kv_bits, kv_group_size, quantized_kv_start, prefill_step_size, float layers
SCHEMES = {
    # Quantized after the first 16-token chunk: later chunks attend over
    # packed keys under the causal mask, decoding over packed keys.
    "b8_g64_start0": (8, 64, 0, 16, []),
    # Switches while decoding (the cache passes 44 tokens on the 4th step).
    "b4_g32_start44": (4, 32, 44, 2048, []),
    # The first and last layers kept in float.
    "b4_g64_float_ends": (4, 64, 0, 2048, [0, -1]),
}


def wide_heads(config):
    config = dict(config)
    config["hidden_size"] = 128
    config["num_attention_heads"] = 2
    config["num_key_value_heads"] = 1
    if "head_dim" in config:
        config["head_dim"] = 64
    if "global_head_dim" in config:  # gemma4's full-attention layers
        config["global_head_dim"] = 64
    if "block_dim" in config:  # lfm2's MLP width is its own field
        config["block_dim"] = 128
    scaling = config.get("rope_scaling")
    if scaling and "short_factor" in scaling:  # longrope: one factor per rotated pair
        scaling = dict(scaling)
        pairs = int(64 * config.get("partial_rotary_factor", 1.0)) // 2
        for key in ("short_factor", "long_factor"):
            scaling[key] = [1.0 + 0.1 * (i % 4) for i in range(pairs)]
        config["rope_scaling"] = scaling
    return config


def layer_policy(float_layers):
    """mlx-lm's maybe_quantize_kv_cache, with windowed and float-kept layers
    left in float."""
    def maybe_quantize(prompt_cache, quantized_kv_start, kv_group_size, kv_bits):
        if kv_bits is None:
            return
        layers = len(prompt_cache)
        kept = {layer % layers for layer in float_layers}
        for index, cache in enumerate(prompt_cache):
            if index in kept or isinstance(cache, RotatingKVCache):
                continue
            if hasattr(cache, "to_quantized") and cache.offset >= quantized_kv_start:
                prompt_cache[index] = cache.to_quantized(group_size=kv_group_size, bits=kv_bits)
    return maybe_quantize


def run(model, prompt, scheme):
    bits, group, start, prefill, float_layers = scheme
    recorded = []

    def recorder(tokens, logits):
        recorded.append(logits)
        return logits

    mlx_generate.maybe_quantize_kv_cache = layer_policy(float_layers)
    tokens = []
    for token, _ in generate_step(mx.array(prompt), model, max_tokens=STEPS,
                                  logits_processors=[recorder], kv_bits=bits,
                                  kv_group_size=group, quantized_kv_start=start,
                                  prefill_step_size=prefill):
        tokens.append(int(token))
    return tokens, mx.concatenate(recorded, axis=0)


PREFIX_LENGTH = 24
# name: kv_bits, kv_group_size, quantized_kv_start
PROMPT_CACHE_SCHEMES = {"float": (None, 64, 0), "b4_g32": (4, 32, 0)}


def prompt_cache_case(model, prompt, case_dir, scheme_name):
    bits, group, start = PROMPT_CACHE_SCHEMES[scheme_name]
    mlx_generate.maybe_quantize_kv_cache = layer_policy([])
    cache = make_prompt_cache(model)
    for _ in generate_step(mx.array(prompt[:PREFIX_LENGTH]), model, max_tokens=0,
                           prompt_cache=cache, kv_bits=bits, kv_group_size=group,
                           quantized_kv_start=start):
        pass
    path = case_dir / f"prompt_cache_{scheme_name}.safetensors"
    save_prompt_cache(str(path), cache, {"model": "tiny", "tokenizer_config": "{}"})
    recorded = []

    def recorder(tokens, logits):
        recorded.append(logits)
        return logits

    tokens = []
    for token, _ in generate_step(mx.array(prompt[PREFIX_LENGTH:]), model, max_tokens=STEPS,
                                  prompt_cache=load_prompt_cache(str(path)),
                                  logits_processors=[recorder], kv_bits=bits,
                                  kv_group_size=group, quantized_kv_start=start):
        tokens.append(int(token))
    return tokens, mx.concatenate(recorded, axis=0)


def make_case(out, index, arch, quant_name, quant, dtype):
    name = f"{arch}_{quant_name}"
    case_dir = out / name
    shutil.rmtree(case_dir, ignore_errors=True)
    case_dir.mkdir(parents=True)
    config = wide_heads(model_goldens.ARCHITECTURES[arch])
    seed = model_goldens.checkpoint_seed(index) + 50
    model_dir = model_goldens.build_checkpoint(case_dir, arch, config, quant, seed, dtype)
    model, _ = load_model(model_dir)
    prompt = mx.random.randint(0, model_goldens.VOCAB, (PROMPT_LENGTH,),
                               key=mx.random.key(seed)).tolist()
    goldens = {"name": name, "architecture": arch, "ids": prompt, "schemes": {}}
    arrays = {}
    for scheme_name, scheme in SCHEMES.items():
        bits, group, start, prefill, float_layers = scheme
        entry = dict(bits=bits, group_size=group, start=start, prefill_step=prefill,
                     float_layers=float_layers)
        try:
            entry["greedy"], arrays[scheme_name] = run(model, prompt, scheme)
        except Exception as error:  # mlx-lm's module cannot read a quantized cache
            entry["mlx_lm_error"] = f"{type(error).__name__}: {error}"
        goldens["schemes"][scheme_name] = entry
    # Written even when mlx-lm refused every scheme (Gemma 4): the case
    # still checks the refusals and the float prompt cache.
    mx.eval(arrays)
    mx.save_safetensors(str(case_dir / "logits.safetensors"), arrays)
    goldens["prompt_cache"] = {"prefix_length": PREFIX_LENGTH, "schemes": {}}
    continued = {}
    for scheme_name, (bits, group, start) in PROMPT_CACHE_SCHEMES.items():
        entry = dict(bits=bits, group_size=group, start=start)
        try:
            entry["greedy"], continued[scheme_name] = prompt_cache_case(
                model, prompt, case_dir, scheme_name)
        except Exception as error:  # mlx-lm's module cannot read a quantized cache
            entry["mlx_lm_error"] = f"{type(error).__name__}: {error}"
        goldens["prompt_cache"]["schemes"][scheme_name] = entry
    if continued:
        mx.eval(continued)
        mx.save_safetensors(str(case_dir / "prompt_cache_logits.safetensors"), continued)
    (case_dir / "goldens.json").write_text(json.dumps(goldens))
    return name


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--only", help="comma-separated case names")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    cases = []
    for index, arch in enumerate(model_goldens.ARCHITECTURES):
        for quant_name, quant, dtype in model_goldens.case_quantizations(arch, ["bf16", "q4"]):
            if only and f"{arch}_{quant_name}" not in only:
                continue
            cases.append(make_case(args.out, index, arch, quant_name, quant, dtype))
            print("wrote", cases[-1], flush=True)
    (args.out / "manifest.json").write_text(json.dumps({"cases": cases, "steps": STEPS}))


if __name__ == "__main__":
    main()
