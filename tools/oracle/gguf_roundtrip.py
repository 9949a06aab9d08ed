#!/usr/bin/env python3
"""Round-trip fixture for the GGUF converter.

Builds tiny random models with mlx-lm's own classes (llama, qwen2,
gemma3_text), writes each as a GGUF file the way llama.cpp's converter lays
it out (GGUF tensor names, attn_q/attn_k rows permuted for llama's rope,
Gemma norm weights stored as 1 + w, small byte-level / SentencePiece
vocabularies), and records mlx-lm's logits for a fixed prompt. The converter
must turn each GGUF back into a directory whose mlx-lm logits match.

Output (under --out): <name>.gguf, manifest.json with the reference logits.
"""
import argparse
import json
from pathlib import Path

import gguf
import mlx.core as mx
import numpy as np
from mlx.utils import tree_flatten
from mlx_lm.models import gemma3_text, llama, qwen2

PROMPT = [5, 17, 33, 2, 60, 61, 9, 41, 12, 3, 77, 20]

BLOCK_NAMES = {  # Hugging Face suffix -> GGUF suffix, per block
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "post_attention_layernorm": "ffn_norm",
}
GEMMA_BLOCK_NAMES = dict(BLOCK_NAMES, **{
    "post_attention_layernorm": "post_attention_norm",
    "pre_feedforward_layernorm": "ffn_norm",
    "post_feedforward_layernorm": "post_ffw_norm",
})


def gguf_name(hf_name, gemma):
    top = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
           "lm_head.weight": "output.weight"}
    if hf_name in top:
        return top[hf_name]
    parts = hf_name.split(".")  # model.layers.N.<module...>.<weight|bias>
    module = ".".join(parts[3:-1])
    table = GEMMA_BLOCK_NAMES if gemma else BLOCK_NAMES
    return f"blk.{parts[2]}.{table[module]}.{parts[-1]}"


def rope_permute(weights, heads):
    """llama.cpp's convert_hf_to_gguf `permute`: interleave each head's halves."""
    rows = weights.shape[0]
    return (weights.reshape(heads, 2, rows // heads // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def byte_alphabet():
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    mapping, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + extra)
            extra += 1
    return mapping


def add_byte_level_vocab(writer, vocab_size, pre):
    alphabet = byte_alphabet()
    tokens = [alphabet[b] for b in range(256)]
    merges = ["Ġ t", "h e", "Ġt he", "i n", "a n"]
    tokens += ["Ġt", "he", "Ġthe", "in", "an"]
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokens += special
    tokens += [f"[PAD{i}]" for i in range(len(tokens), vocab_size)]
    types = [1] * (256 + 5) + [3] * len(special) + [4] * (vocab_size - 256 - 5 - len(special))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(256 + 5)
    writer.add_eos_token_id(256 + 7)
    writer.add_add_bos_token(False)
    writer.add_chat_template("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}")


def add_sentencepiece_vocab(writer, vocab_size):
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [3, 3, 3, 2] + [6] * 256
    pieces = ["▁", "e", "t", "h", "▁t", "he", "▁the", "a", "n", "an", "  ", "<start_of_turn>"]
    tokens += pieces
    types += [1] * (len(pieces) - 1) + [3]
    tokens += [f"<unused{i}>" for i in range(len(tokens), vocab_size)]
    types += [4] * (vocab_size - len(types))
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_scores([-float(i) for i in range(vocab_size)])
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_unk_token_id(3)
    writer.add_pad_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_add_space_prefix(False)


def randomize(model, gemma):
    """Random weights; norms away from 1 so a wrong norm shift shows."""
    params = {}
    for name, value in tree_flatten(model.parameters()):
        scale = 0.3 if "norm" in name else 0.08
        noise = mx.random.normal(value.shape) * scale
        params[name] = noise if (gemma and "norm" in name) else (1.0 + noise if "norm" in name else noise)
    model.load_weights(list(params.items()))
    mx.eval(model.parameters())
    return params


MODELS = {
    "llama": dict(module=llama, arch="llama", pre="smollm", args=dict(
        model_type="llama", hidden_size=64, num_hidden_layers=2, intermediate_size=96,
        num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5, vocab_size=300,
        rope_theta=10000.0, tie_word_embeddings=False, max_position_embeddings=512)),
    "qwen2": dict(module=qwen2, arch="qwen2", pre="qwen2", args=dict(
        model_type="qwen2", hidden_size=64, num_hidden_layers=2, intermediate_size=96,
        num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6, vocab_size=300,
        rope_theta=1000000.0, tie_word_embeddings=True, max_position_embeddings=512)),
    "gemma3": dict(module=gemma3_text, arch="gemma3", pre=None, args=dict(
        model_type="gemma3_text", hidden_size=64, num_hidden_layers=6, intermediate_size=96,
        num_attention_heads=2, num_key_value_heads=1, head_dim=32, rms_norm_eps=1e-6,
        vocab_size=300, rope_theta=1000000.0, rope_local_base_freq=10000.0,
        query_pre_attn_scalar=32, sliding_window=8, sliding_window_pattern=6,
        max_position_embeddings=512)),
}


def write_gguf(path, spec, params, quant_type):
    args, arch = spec["args"], spec["arch"]
    gemma = arch == "gemma3"
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_name(f"tiny {arch}")
    writer.add_block_count(args["num_hidden_layers"])
    writer.add_context_length(args["max_position_embeddings"])
    writer.add_embedding_length(args["hidden_size"])
    writer.add_feed_forward_length(args["intermediate_size"])
    writer.add_head_count(args["num_attention_heads"])
    writer.add_head_count_kv(args["num_key_value_heads"])
    writer.add_rope_freq_base(args["rope_theta"])
    writer.add_layer_norm_rms_eps(args["rms_norm_eps"])
    if "head_dim" in args:
        writer.add_key_length(args["head_dim"])
        writer.add_value_length(args["head_dim"])
    if gemma:
        writer.add_sliding_window(args["sliding_window"])
        add_sentencepiece_vocab(writer, args["vocab_size"])
    else:
        add_byte_level_vocab(writer, args["vocab_size"], spec["pre"])
    heads, kv_heads = args["num_attention_heads"], args["num_key_value_heads"]
    for name, value in sorted(params.items()):
        data = np.array(value.astype(mx.float32))
        if arch == "llama" and ".self_attn.q_proj." in name:
            data = rope_permute(data, heads)
        if arch == "llama" and ".self_attn.k_proj." in name:
            data = rope_permute(data, kv_heads)
        if gemma and name.endswith("norm.weight"):
            data = data + 1.0  # llama.cpp stores Gemma norms as 1 + w
        if data.ndim == 2 and quant_type is not None:
            writer.add_tensor(gguf_name(name, gemma), gguf.quants.quantize(data, quant_type),
                              raw_dtype=quant_type)
        else:
            writer.add_tensor(gguf_name(name, gemma), data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = {"prompt": PROMPT, "models": []}
    for index, (name, spec) in enumerate(MODELS.items()):
        mx.random.seed(1234 + index)
        model_args = spec["module"].ModelArgs.from_dict(spec["args"])
        model = spec["module"].Model(model_args)
        params = randomize(model, spec["arch"] == "gemma3")
        logits = model(mx.array([PROMPT]))[0].astype(mx.float32)
        np.save(args.out / f"{name}.logits.npy", np.array(logits))
        for variant, quant_type in (("f32", None), ("q8_0", gguf.GGMLQuantizationType.Q8_0)):
            path = args.out / f"{name}_{variant}.gguf"
            write_gguf(path, spec, params, quant_type)
            manifest["models"].append({"name": f"{name}_{variant}", "gguf": path.name,
                                       "logits": f"{name}.logits.npy", "exact": quant_type is None,
                                       "model_type": spec["args"]["model_type"]})
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
