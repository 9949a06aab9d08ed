#!/usr/bin/env python3
"""Checks converted GGUF models with the reference Python stack (a test, run
by CTest after the conversion fixtures):

  --roundtrip GOLDENS CONVERTED   every model of gguf_roundtrip.py's manifest,
      converted into CONVERTED/<name>: mlx_lm.utils.load must load it, the
      logits for the fixed prompt must equal mlx-lm's on the original weights
      (bit for bit for dense float32 conversions; cosine > 0.999 for Q8_0),
      and the synthesized tokenizer must load in `tokenizers` and round-trip.
  --real DIR GGUF                 a converted real model: loads in mlx-lm,
      forward shapes right, logits finite, mean NLL of two English sentences
      below 3 nats (broken conversions score 10+), greedy continuation reported,
      and tokenizer.json encodes like transformers' own GGUF tokenizer.

  --pulled NAME                   the same for a model of the model cache
      registry ($MLX_CPP_HOME or ~/.cache/mlx-cpp); exits 77 (skipped) when
      it is not pulled, or when --unavailable names an existing file (the
      pull fixture could not fetch it), printing the reason.

Exits non-zero on the first failed check; writes a JSON report to --out.
"""
import argparse
import json
import sys
from pathlib import Path

import mlx.core as mx
import numpy as np
from mlx_lm.utils import load
from tokenizers import Tokenizer

SAMPLE_TEXTS = [
    "The capital of France is",
    "Hello, world! 1234567 numbers and  double  spaces\nnew line\ttab",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)",
    "Ünïcödé façade, naïve café — “quotes” and emoji 🙂 日本語のテキスト",
    "<|im_start|>user\nHi there<|im_end|>\n",
]


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check_roundtrip(goldens, converted, report):
    manifest = json.loads((goldens / "manifest.json").read_text())
    for entry in manifest["models"]:
        directory = converted / entry["name"]
        model, tokenizer = load(str(directory))
        config = json.loads((directory / "config.json").read_text())
        if config["model_type"] != entry["model_type"]:
            fail(f"{entry['name']}: model_type {config['model_type']}")
        logits = np.array(model(mx.array([manifest["prompt"]]))[0].astype(mx.float32))
        expected = np.load(goldens / entry["logits"])
        if logits.shape != expected.shape:
            fail(f"{entry['name']}: logits shape {logits.shape} != {expected.shape}")
        difference = float(np.abs(logits - expected).max())
        cosine = float((logits * expected).sum() /
                       (np.linalg.norm(logits) * np.linalg.norm(expected)))
        if entry["exact"] and difference != 0.0:
            fail(f"{entry['name']}: dense float32 conversion differs by {difference}")
        if not entry["exact"] and cosine < 0.999:
            fail(f"{entry['name']}: Q8_0 conversion logits cosine {cosine}")
        fast = Tokenizer.from_file(str(directory / "tokenizer.json"))
        text = "the then an"
        ids = fast.encode(text, add_special_tokens=False).ids
        if fast.decode(ids) != text or tokenizer.encode(text) is None:
            fail(f"{entry['name']}: tokenizer does not round-trip '{text}': {ids}")
        report[entry["name"]] = {"max_abs_difference": difference, "cosine": cosine,
                                 "tokens": ids}
        print(f"ok {entry['name']}: max |diff| {difference:.3g}, cosine {cosine:.6f}, ids {ids}")


def transformers_tokenizer(gguf_path):
    """transformers' own GGUF tokenizer builder (convert_gguf_tokenizer), fed
    from gguf.GGUFReader because transformers' GGUF reader needs torch."""
    import gguf
    from transformers.integrations.gguf.gguf_tokenizer_mapping import (
        GGUF_TOKENIZER_MAPPING, convert_gguf_tokenizer)
    reader = gguf.GGUFReader(str(gguf_path))
    tokenizer_dict = {}
    for key, name in GGUF_TOKENIZER_MAPPING["tokenizer"].items():
        field = reader.fields.get(f"tokenizer.{key}")
        if field is not None:
            tokenizer_dict[name] = field.contents()
    architecture = reader.fields["general.architecture"].contents()
    backend, _ = convert_gguf_tokenizer(architecture, tokenizer_dict)
    return backend


def check_tokenizer_against_transformers(directory, gguf_path, report):
    fast = Tokenizer.from_file(str(directory / "tokenizer.json"))
    reference = transformers_tokenizer(gguf_path)
    mismatches = []
    for text in SAMPLE_TEXTS:
        ours = fast.encode(text, add_special_tokens=False).ids
        theirs = reference.encode(text, add_special_tokens=False).ids
        if ours != theirs:
            mismatches.append({"text": text, "ours": ours, "transformers": theirs})
        if fast.decode(ours, skip_special_tokens=False) != text:
            fail(f"{directory.name}: decode(encode({text!r})) = {fast.decode(ours, skip_special_tokens=False)!r}")
    report["tokenizer_mismatches"] = mismatches
    if mismatches:
        fail(f"{directory.name}: tokenizer differs from transformers' GGUF tokenizer: "
             + json.dumps(mismatches[0], ensure_ascii=False))
    print(f"ok {directory.name}: tokenizer matches transformers on {len(SAMPLE_TEXTS)} texts")


# Two sentences (about 35 tokens): MLX's stock CPU path scores the 1.5B at
# about 1.5 s a token, and the real models' NLLs here (1.5-1.9) sit as far
# below the bound as the longer paragraph's did.
PARAGRAPH = (
    "Paris is the capital and most populous city of France. With an estimated population of "
    "more than two million residents, it is the centre of the Ile-de-France region and one of "
    "the largest cities in Europe.")


def mean_negative_log_likelihood(model, tokenizer, text):
    import mlx.nn as nn
    ids = mx.array([tokenizer.encode(text)])
    logits = model(ids[:, :-1]).astype(mx.float32)
    return float(nn.losses.cross_entropy(logits, ids[:, 1:]).mean().item())


def check_real(directory, gguf_path, report):
    model, tokenizer = load(str(directory))
    config = json.loads((directory / "config.json").read_text())
    prompt = tokenizer.encode("The capital of France is")
    # Greedy through a cache: one token a step (MLX's CPU matmuls cost
    # about as much per token at these lengths, so re-running the prompt
    # each step costs a large model minutes). The prompt's own logits are
    # checked first.
    from mlx_lm.models.cache import make_prompt_cache
    cache = make_prompt_cache(model)
    tokens = list(prompt)
    step_logits = model(mx.array([tokens]), cache=cache)
    if step_logits.shape != (1, len(prompt), config["vocab_size"]):
        fail(f"{directory.name}: logits shape {step_logits.shape}")
    if not bool(mx.all(mx.isfinite(step_logits)).item()):
        fail(f"{directory.name}: non-finite logits")
    for _ in range(8):
        next_token = int(mx.argmax(step_logits[0, -1]).item())
        tokens.append(next_token)
        step_logits = model(mx.array([[next_token]]), cache=cache)
    continuation = tokenizer.decode(tokens[len(prompt):])
    report["continuation"] = continuation
    print(f"{directory.name}: 'The capital of France is' -> {continuation!r}")
    # A broken conversion (wrong rope rows, norm shift, scales) scores ~10-20
    # nats per token on plain English; the real models score below 3.
    nll = mean_negative_log_likelihood(model, tokenizer, PARAGRAPH)
    report["paragraph_nll"] = nll
    print(f"{directory.name}: mean NLL on two Wikipedia-style sentences {nll:.3f}")
    if not nll < 3.0:
        fail(f"{directory.name}: mean NLL {nll:.3f} >= 3.0: conversion is likely broken")
    check_tokenizer_against_transformers(directory, gguf_path, report)


def pulled_model(name, unavailable):
    import os
    if unavailable is not None and unavailable.exists():
        print(f"SKIP {name}: could not be fetched: {unavailable.read_text().strip()}")
        sys.exit(77)
    home = os.environ.get("MLX_CPP_HOME")
    root = Path(home) if home else Path.home() / ".cache" / "mlx-cpp"
    registry_path = root / "registry.json"
    registry = json.loads(registry_path.read_text()) if registry_path.exists() else {}
    if name not in registry:
        print(f"SKIP {name}: not pulled (run `mlx-cpp pull {name}`)")
        sys.exit(77)
    return Path(registry[name]["directory"]), Path(registry[name]["gguf"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--roundtrip", nargs=2, type=Path, metavar=("GOLDENS", "CONVERTED"))
    parser.add_argument("--real", nargs=2, type=Path, action="append", default=[],
                        metavar=("DIR", "GGUF"))
    parser.add_argument("--pulled", action="append", default=[], metavar="NAME")
    parser.add_argument("--unavailable", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    report = {}
    for name in args.pulled:
        args.real.append(pulled_model(name, args.unavailable))
    if args.roundtrip:
        check_roundtrip(*args.roundtrip, report)
    for directory, gguf_path in args.real:
        report[directory.name] = {}
        check_real(directory, gguf_path, report[directory.name])
    (args.out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
