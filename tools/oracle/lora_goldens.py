#!/usr/bin/env python3
"""Goldens for LoRA and DoRA adapters, produced by mlx-lm's own
load_adapters (as mlx_lm.utils.load(adapter_path=...) applies them) and its
fuse (as mlx_lm.fuse merges them).

For every architecture x {bf16 (float32 for a mixture of experts), q4} of
model_goldens (read from --models, the model_goldens fixture's output),
adapters in mlx-lm's directory format are made with mlx-lm's
linear_to_lora_layers and random values in place of trained ones:

  lora       every projection of every block, rank 4, float32 factors
  lora_keys  the last block only, three of its projections (and lm_head
             where the model has one), rank 2, bfloat16 factors
  dora       DoRA on the last two blocks (mlx-lm refuses it on a mixture
             of experts: recorded as refused)

For each, the adapted model's greedy generation (every step's logits) on
the case's "window" prompt and its full forward on the "short" prompt are
recorded. The lora and dora adapters are also fused as mlx_lm.fuse fuses
them (quantized weights quantized again); the fused checkpoint is saved
with mlx-lm's save_model and its forward recorded.

Writes --out/<case>/<adapter>/ (adapter_config.json, adapters.safetensors,
fused/), goldens.json and logits.safetensors per case, plus manifest.json.
Goldens are machine-specific: generated where they are checked, never
committed.
"""
import argparse
import json
import shutil
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten, tree_unflatten
from mlx_lm.generate import generate_step
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.tuner.utils import linear_to_lora_layers, load_adapters
from mlx_lm.utils import load_model, save_config, save_model

import model_goldens

STEPS = 8
ADAPTER_LEAVES = ("lora_a", "lora_b", "m")


def projection_keys(model):
    """Three projections of the last block (first, middle, last by name),
    as linear_to_lora_layers' keys name them."""
    names = sorted(name for name, module in model.layers[-1].named_modules()
                   if isinstance(module, (nn.Linear, nn.QuantizedLinear)))
    return sorted({names[0], names[len(names) // 2], names[-1]})


def adapter_specs(model):
    keys = projection_keys(model)
    if "lm_head" in dict(model.named_modules()):
        keys.append("lm_head")
    return {
        "lora": dict(fine_tune_type="lora", num_layers=-1,
                     lora_parameters=dict(rank=4, scale=2.0, dropout=0.0), dtype=mx.float32),
        "lora_keys": dict(fine_tune_type="lora", num_layers=1,
                          lora_parameters=dict(rank=2, scale=10.0, dropout=0.0, keys=keys),
                          dtype=mx.bfloat16),
        "dora": dict(fine_tune_type="dora", num_layers=2,
                     lora_parameters=dict(rank=4, scale=2.0, dropout=0.0), dtype=mx.float32),
    }


def write_adapter(model_dir, adapter_dir, spec, seed):
    """An adapter directory as mlx_lm.lora saves one, with random factors
    (lora_b is zero when training starts; random here, so it matters)."""
    model, _ = load_model(model_dir)
    linear_to_lora_layers(model, spec["num_layers"], spec["lora_parameters"],
                          use_dora=spec["fine_tune_type"] == "dora")
    mx.random.seed(seed)
    weights = {}
    for name, value in tree_flatten(model.parameters()):
        leaf = name.rsplit(".", 1)[-1]
        if leaf not in ADAPTER_LEAVES:
            continue
        if leaf == "m":  # DoRA's magnitudes: the weight's row norms, perturbed
            value = value * (1.0 + 0.1 * mx.random.normal(value.shape))
        elif leaf == "lora_a":
            value = mx.random.normal(value.shape) * value.shape[-2 if value.ndim == 2 else -1] ** -0.5
        else:
            value = 0.05 * mx.random.normal(value.shape)
        weights[name] = value.astype(spec["dtype"])
    adapter_dir.mkdir(parents=True)
    mx.save_safetensors(str(adapter_dir / "adapters.safetensors"), weights)
    config = {key: value for key, value in spec.items() if key != "dtype"}
    (adapter_dir / "adapter_config.json").write_text(json.dumps(config, indent=4))


def record(model, prompts):
    recorded = []

    def recorder(tokens, logits):
        recorded.append(logits)
        return logits

    tokens = [int(token) for token, _ in generate_step(
        mx.array(prompts["window"]), model, max_tokens=STEPS, logits_processors=[recorder])]
    forward = model(mx.array(prompts["short"])[None], cache=make_prompt_cache(model))[0]
    return tokens, mx.concatenate(recorded, axis=0), forward


def fuse(model, model_dir, fused_dir):
    """mlx_lm.fuse's steps: every adapter layer's fuse(), then save_model."""
    fused = [(name, module.fuse(dequantize=False)) for name, module in model.named_modules()
             if hasattr(module, "fuse")]
    model.update_modules(tree_unflatten(fused))
    save_model(fused_dir, model, donate_model=False)
    config = json.loads((model_dir / "config.json").read_text())
    save_config(config, fused_dir / "config.json")


def make_case(models, out, name):
    model_dir = models / name / "model"
    source = json.loads((models / name / "goldens.json").read_text())
    prompts = {key: value["ids"] for key, value in source["prompts"].items()}
    case_dir = out / name
    shutil.rmtree(case_dir, ignore_errors=True)
    case_dir.mkdir(parents=True)
    base, _ = load_model(model_dir)
    goldens = {"name": name, "prompts": prompts, "adapters": {}}
    arrays = {}
    for index, (adapter, spec) in enumerate(adapter_specs(base).items()):
        adapter_dir = case_dir / adapter
        entry = {}
        try:
            write_adapter(model_dir, adapter_dir, spec, seed=1000 + index)
        except ValueError as error:  # mlx-lm refuses DoRA on experts
            entry["mlx_lm_error"] = str(error)
            goldens["adapters"][adapter] = entry
            continue
        model, _ = load_model(model_dir)
        model = load_adapters(model, str(adapter_dir))
        model.eval()
        entry["greedy"], arrays[f"{adapter}.generation"], arrays[f"{adapter}.forward"] = record(
            model, prompts)
        if adapter != "lora_keys":
            fuse(model, model_dir, adapter_dir / "fused")
            fused, _ = load_model(adapter_dir / "fused")
            arrays[f"{adapter}.fused_forward"] = fused(
                mx.array(prompts["short"])[None], cache=make_prompt_cache(fused))[0]
            entry["fused"] = True
        goldens["adapters"][adapter] = entry
    mx.eval(arrays)
    mx.save_safetensors(str(case_dir / "logits.safetensors"), arrays)
    (case_dir / "goldens.json").write_text(json.dumps(goldens))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--models", required=True, type=Path)
    parser.add_argument("--only", help="comma-separated case names")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    cases = []
    for arch in model_goldens.ARCHITECTURES:
        for quant_name, _, _ in model_goldens.case_quantizations(arch, ["bf16", "q4"]):
            name = f"{arch}_{quant_name}"
            if only and name not in only:
                continue
            make_case(args.models, args.out, name)
            cases.append(name)
            print("wrote", name, flush=True)
    (args.out / "manifest.json").write_text(json.dumps({"cases": cases, "steps": STEPS}))


if __name__ == "__main__":
    main()
