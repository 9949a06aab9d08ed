#!/usr/bin/env python3
"""A random-weight GGUF of the same real shapes as random_checkpoint.py, for
llama.cpp's side of a speed run (llama-quantize then makes Q4_0 or Q4_K_M).

Float16 tensors, normal(0, 0.02) matrices and unit norms, under llama.cpp's
tensor names; the tokenizer keys are copied from one of the vocabulary files
llama.cpp ships in models/ (the Llama-3 vocabulary for the llama shape,
Qwen2's for the qwen2 shape), whose token count sets the vocabulary size.
For llama3 rope scaling, rope_freqs.weight is computed as llama.cpp's
converter computes it. Needs llama.cpp's gguf-py on PYTHONPATH.

usage: random_gguf.py --shape llama-3.1-8b --vocab-file ggml-vocab-llama-bpe.gguf --out F.gguf
"""
import argparse
import math
from pathlib import Path

import gguf
import numpy as np

from random_checkpoint import SHAPES

ARCH = {"qwen2": "qwen2", "llama": "llama"}


def copy_tokenizer(writer, vocab_file):
    reader = gguf.GGUFReader(vocab_file)
    tokens = None
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        value_type = field.types[0]
        value = field.contents()
        if value_type == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(name, value, value_type, sub_type=field.types[-1])
        else:
            writer.add_key_value(name, value, value_type)
        if name == "tokenizer.ggml.tokens":
            tokens = len(value)
    return tokens


def llama3_rope_factors(config):
    scaling = config["rope_scaling"]
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    base = config["rope_theta"]
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context = scaling["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old_context / low, old_context / high
    factors = []
    for i in range(0, head_dim, 2):
        wavelen = 2 * math.pi / (1.0 / base ** (i / head_dim))
        if wavelen < high_wavelen:
            factors.append(1.0)
        elif wavelen > low_wavelen:
            factors.append(factor)
        else:
            smooth = (old_context / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", required=True, choices=sorted(SHAPES))
    parser.add_argument("--vocab-file", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    config = SHAPES[args.shape]
    arch = ARCH[config["model_type"]]
    rng = np.random.default_rng(0)

    def matrix(rows, cols):
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)

    writer = gguf.GGUFWriter(str(args.out), arch)
    vocab = copy_tokenizer(writer, args.vocab_file)
    hidden, layers = config["hidden_size"], config["num_hidden_layers"]
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = hidden // heads
    ffn = config["intermediate_size"]
    writer.add_context_length(8192)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_rope_freq_base(config["rope_theta"])
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_vocab_size(vocab)

    ones = np.ones(hidden, dtype=np.float32)
    writer.add_tensor("token_embd.weight", matrix(vocab, hidden))
    writer.add_tensor("output_norm.weight", ones)
    if not config.get("tie_word_embeddings", False):
        writer.add_tensor("output.weight", matrix(vocab, hidden))
    if config.get("rope_scaling", {}).get("rope_type") == "llama3":
        writer.add_tensor("rope_freqs.weight", llama3_rope_factors(config))
    biases = arch == "qwen2"
    for i in range(layers):
        block = f"blk.{i}."
        writer.add_tensor(block + "attn_norm.weight", ones)
        for name, rows in (("attn_q", heads * head_dim), ("attn_k", kv_heads * head_dim),
                           ("attn_v", kv_heads * head_dim)):
            writer.add_tensor(block + name + ".weight", matrix(rows, hidden))
            if biases:
                writer.add_tensor(block + name + ".bias", np.zeros(rows, dtype=np.float32))
        writer.add_tensor(block + "attn_output.weight", matrix(hidden, heads * head_dim))
        writer.add_tensor(block + "ffn_norm.weight", ones)
        writer.add_tensor(block + "ffn_gate.weight", matrix(ffn, hidden))
        writer.add_tensor(block + "ffn_up.weight", matrix(ffn, hidden))
        writer.add_tensor(block + "ffn_down.weight", matrix(hidden, ffn))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"{args.out}: {args.shape}, vocabulary {vocab}")


if __name__ == "__main__":
    main()
