#!/usr/bin/env python3
"""A random-weight MLX checkpoint of a real model's shape, for speed runs.

Speed does not depend on the weights' values, and the GPU machine has no
network: this builds the model with mlx-lm's own classes (their default
initialisation is random), casts it to bfloat16, optionally quantizes it
with mlx-lm's quantize_model, and saves it with save_model/save_config, so
mlx-cpp and mlx-lm read the same files. A word-level tokenizer of the model's
vocabulary size ("t0", "t1", ...) lets mlx-lm's loader and benchmark run; the
text is meaningless, the token ids are what is timed.

usage: random_checkpoint.py --shape qwen2.5-1.5b --quant q4g64 --out DIR
"""
import argparse
import json
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.utils import _get_classes, quantize_model, save_config, save_model

SHAPES = {
    # A few megabytes, to check the scripts end to end in seconds.
    "tiny-llama": dict(model_type="llama", hidden_size=256, num_hidden_layers=2,
                       intermediate_size=512, num_attention_heads=4, num_key_value_heads=2,
                       rms_norm_eps=1e-5, vocab_size=1024, rope_theta=10000.0,
                       tie_word_embeddings=True, max_position_embeddings=4096),
    "qwen2.5-1.5b": dict(model_type="qwen2", hidden_size=1536, num_hidden_layers=28,
                         intermediate_size=8960, num_attention_heads=12, num_key_value_heads=2,
                         rms_norm_eps=1e-6, vocab_size=151936, rope_theta=1000000.0,
                         tie_word_embeddings=True, max_position_embeddings=32768),
    "llama-3.1-8b": dict(model_type="llama", hidden_size=4096, num_hidden_layers=32,
                         intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                         rms_norm_eps=1e-5, vocab_size=128256, rope_theta=500000.0,
                         tie_word_embeddings=False, max_position_embeddings=131072,
                         rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                           high_freq_factor=4.0,
                                           original_max_position_embeddings=8192)),
}

# name: (bits, group size); bf16 is not quantized.
QUANTS = {"bf16": None, "q4g32": (4, 32), "q4g64": (4, 64), "q8g64": (8, 64)}


def word_level_tokenizer(out, vocab_size):
    vocab = {f"t{i}": i for i in range(vocab_size)}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None, "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "t0"},
    }
    (out / "tokenizer.json").write_text(json.dumps(tokenizer))
    (out / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "t0", "eos_token": "t1"}))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", required=True, choices=sorted(SHAPES))
    parser.add_argument("--quant", required=True, choices=sorted(QUANTS))
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    mx.random.seed(args.seed)
    config = dict(SHAPES[args.shape])
    model_class, args_class = _get_classes(config)
    model = model_class(args_class.from_dict(config))
    # Each tensor is drawn and cast one at a time, so the float32 draft of
    # the whole model never sits in memory at once.
    model.set_dtype(mx.bfloat16)
    mx.eval(model.parameters())
    # Normal-sized values keep norms and softmax in their usual ranges.
    for name, module in model.named_modules():
        if isinstance(module, nn.RMSNorm):
            module.weight = mx.ones_like(module.weight)
    quant = QUANTS[args.quant]
    if quant is not None:
        model, config = quantize_model(model, config, group_size=quant[1], bits=quant[0])
    args.out.mkdir(parents=True, exist_ok=True)
    save_model(args.out, model, donate_model=True)
    save_config(config, config_path=args.out / "config.json")
    word_level_tokenizer(args.out, config["vocab_size"])
    print(f"{args.out}: {args.shape} {args.quant}")


if __name__ == "__main__":
    main()
