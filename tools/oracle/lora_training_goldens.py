#!/usr/bin/env python3
"""Goldens for LoRA training, produced by mlx_lm.lora's own train_model
(linear_to_lora_layers, iterate_batches, default_loss, Adam/AdamW, the
compiled step) on a tiny random llama checkpoint that uses a real
tokenizer's files (--tokenizer: a model directory; SmolLM2's by default), so the
chat template and tokenizer mlx-lm applies to the data are the ones
mlx-cpp applies.

Runs (each from a fixed seed):
  chat_masked  chat records with tools, mask_prompt, Adam, 20 steps,
               validation at steps 1, 10 and 20, a checkpoint at 10
  text_adamw   text records, AdamW, keys (q, v projections), 12 steps
  completions  prompt/completion records, resumed from a given adapter
               file (random, nonzero lora_b), 8 steps
  scheduled    prompt/completion records, a cosine schedule behind a
               linear warmup, gradients accumulated over 2 batches, 9 steps
  dropout      chat records, AdamW, LoRA dropout 0.25, 6 steps
  checkpointed chat records, Adam, LoRA dropout 0.25, grad_checkpoint
               (each block recomputed in the backward pass), 6 steps

Also --out/schedules.json: the rates of mlx-lm's build_schedule for each
of mlx.optimizers' schedules (with and without warmup) at steps 0-15.

Writes --out/model (checkpoint + tokenizer files), --out/data/<format>/,
--out/<run>/adapters (mlx-lm's adapter directory and checkpoints),
--out/<run>/goldens.json (every step's loss, every validation loss) and
--out/manifest.json. Goldens are machine-specific: generated where they
are checked, never committed.
"""
import argparse
import json
import shutil
import types
from pathlib import Path

import mlx.core as mx
import numpy as np
from mlx_lm.lora import CONFIG_DEFAULTS, train_model
from mlx_lm.tuner.callbacks import TrainingCallback
from mlx_lm.tuner.datasets import load_dataset
from mlx_lm.utils import load

import model_goldens

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "chat_template.jinja", "vocab.json", "merges.txt", "generation_config.json")
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
CITIES = ["Paris", "Lima", "Oslo", "Cairo", "Hanoi", "Quito", "Dakar", "Perth", "Riga",
          "Sucre", "Baku", "Bern", "Doha", "Lome"]


def write_data(data_dir):
    """Three small datasets, one per format, train and valid."""
    records = {
        "chat": [{"messages": [
            {"role": "system", "content": "Answer in JSON."},
            {"role": "user", "content": f"What is the capital city called {city}?"},
            {"role": "assistant", "content": json.dumps({"city": city, "capital": True})}],
            **({"tools": TOOLS} if i % 3 == 0 else {})} for i, city in enumerate(CITIES)],
        "text": [{"text": f"{city} is a city. " * (1 + i % 4)} for i, city in enumerate(CITIES)],
        "completions": [{"prompt": f"Spell {city}.", "completion": " ".join(city)}
                        for city in CITIES],
    }
    for name, items in records.items():
        folder = data_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items[:10]))
        (folder / "valid.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items[10:]))


RUNS = {
    "chat_masked": dict(data="chat", mask_prompt=True, optimizer="adam", iters=20,
                        batch_size=2, learning_rate=1e-3, num_layers=2, steps_per_eval=10,
                        save_every=10, val_batches=2, seed=3,
                        lora_parameters=dict(rank=4, scale=10.0, dropout=0.0)),
    "text_adamw": dict(data="text", optimizer="adamw", iters=12, batch_size=3,
                       learning_rate=5e-4, num_layers=-1, steps_per_eval=6, save_every=100,
                       val_batches=-1, seed=5,
                       lora_parameters=dict(rank=2, scale=20.0, dropout=0.0,
                                            keys=["self_attn.q_proj", "self_attn.v_proj"])),
    "completions": dict(data="completions", mask_prompt=True, optimizer="adam", iters=8,
                        batch_size=2, learning_rate=1e-3, num_layers=1, steps_per_eval=100,
                        save_every=100, val_batches=1, seed=0, resume=True,
                        lora_parameters=dict(rank=4, scale=5.0, dropout=0.0)),
    "scheduled": dict(data="completions", mask_prompt=True, optimizer="adam", iters=9,
                      batch_size=2, num_layers=2, steps_per_eval=100, save_every=100,
                      val_batches=1, seed=7, grad_accumulation_steps=2,
                      lr_schedule=dict(name="cosine_decay", arguments=[1e-3, 3, 1e-5],
                                       warmup=1, warmup_init=1e-4),
                      lora_parameters=dict(rank=4, scale=10.0, dropout=0.0)),
    "dropout": dict(data="chat", optimizer="adamw", iters=6, batch_size=2,
                    learning_rate=1e-3, num_layers=2, steps_per_eval=3, save_every=100,
                    val_batches=1, seed=11,
                    lora_parameters=dict(rank=4, scale=10.0, dropout=0.25)),
    "checkpointed": dict(data="chat", mask_prompt=True, optimizer="adam", iters=6,
                         batch_size=2, learning_rate=1e-3, num_layers=2, steps_per_eval=3,
                         save_every=100, val_batches=1, seed=13, grad_checkpoint=True,
                         lora_parameters=dict(rank=4, scale=10.0, dropout=0.25)),
}


class Recorder(TrainingCallback):
    def __init__(self):
        self.train, self.valid = [], []

    def on_train_loss_report(self, info):
        self.train.append(info["train_loss"])

    def on_val_loss_report(self, info):
        self.valid.append([info["iteration"] + 1, info["val_loss"]])


def resume_file(model_dir, run_dir, spec):
    """A starting adapter for the resumed run: mlx-lm's layout, random
    factors (lora_b nonzero)."""
    from mlx.utils import tree_flatten
    from mlx_lm.tuner.utils import linear_to_lora_layers
    from mlx_lm.utils import load_model
    model, _ = load_model(model_dir)
    linear_to_lora_layers(model, spec["num_layers"], spec["lora_parameters"])
    mx.random.seed(99)
    weights = {name: 0.05 * mx.random.normal(value.shape)
               for name, value in tree_flatten(model.parameters())
               if name.endswith(("lora_a", "lora_b"))}
    path = run_dir / "start.safetensors"
    mx.save_safetensors(str(path), weights)
    return path


def run(out, model_dir, name, spec):
    run_dir = out / name
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    args = dict(CONFIG_DEFAULTS)
    args.update({key: value for key, value in spec.items() if key != "resume"})
    args.update(model=str(model_dir), train=True, data=str(out / "data" / spec["data"]),
                adapter_path=str(run_dir / "adapters"), steps_per_report=1,
                resume_adapter_file=None)
    if spec.get("resume"):
        args["resume_adapter_file"] = str(resume_file(model_dir, run_dir, spec))
    args = types.SimpleNamespace(**args)
    np.random.seed(args.seed)  # as mlx_lm.lora's run()
    model, tokenizer = load(str(model_dir))
    train_set, valid_set, _ = load_dataset(args, tokenizer)
    recorder = Recorder()
    train_model(args, model, train_set, valid_set, recorder)
    goldens = {"name": name, "options": {k: v for k, v in vars(args).items()
                                         if isinstance(v, (int, float, str, dict, list, bool))},
               "train_losses": recorder.train, "valid_losses": recorder.valid}
    (run_dir / "goldens.json").write_text(json.dumps(goldens, indent=1))


SCHEDULES = [
    dict(name="cosine_decay", arguments=[1e-3, 7]),
    dict(name="cosine_decay", arguments=[2e-4, 5, 1e-6], warmup=3, warmup_init=1e-7),
    dict(name="linear_schedule", arguments=[1e-3, 1e-5, 9]),
    dict(name="exponential_decay", arguments=[5e-4, 0.9]),
    dict(name="step_decay", arguments=[1e-3, 0.5, 4], warmup=2),
]


def write_schedules(out):
    from mlx_lm.tuner.utils import build_schedule
    rates = []
    for config in SCHEDULES:
        schedule = build_schedule(config)
        rates.append({"config": config, "rates": [
            float(schedule(mx.array(step, mx.uint64)).item()) for step in range(16)]})
    (out / "schedules.json").write_text(json.dumps(rates, indent=1))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--tokenizer", type=Path,
                        help="a model directory whose tokenizer files to use")
    parser.add_argument("--mlx-cpp", help="without --tokenizer: the binary that finds "
                        "(or pulls) smollm2-135m-instruct")
    args = parser.parse_args()
    if args.tokenizer is None:
        import subprocess
        name = "smollm2-135m-instruct"
        found = subprocess.run([args.mlx_cpp, "models", "--path", name], capture_output=True,
                               text=True)
        if found.returncode != 0:
            subprocess.run([args.mlx_cpp, "pull", name], check=True)
            found = subprocess.run([args.mlx_cpp, "models", "--path", name],
                                   capture_output=True, text=True, check=True)
        args.tokenizer = Path(found.stdout.strip())
    args.out.mkdir(parents=True, exist_ok=True)
    config = dict(model_goldens.ARCHITECTURES["llama"])
    config.update(vocab_size=49152, num_hidden_layers=3)
    shutil.rmtree(args.out / "model", ignore_errors=True)
    model_dir = model_goldens.build_checkpoint(args.out, "llama", config, None, 4242)
    for name in TOKENIZER_FILES:
        if (args.tokenizer / name).exists():
            shutil.copy(args.tokenizer / name, model_dir / name)
    write_data(args.out / "data")
    write_schedules(args.out)
    for name, spec in RUNS.items():
        run(args.out, model_dir, name, spec)
        print("wrote", name, flush=True)
    (args.out / "manifest.json").write_text(json.dumps({"runs": list(RUNS)}))


if __name__ == "__main__":
    main()
