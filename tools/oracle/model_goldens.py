#!/usr/bin/env python3
"""Goldens for the model parity tests, produced by mlx-lm itself.

For every architecture x {bf16, q4, q8}, plus a float32 qwen2 at q4 group 32
(float32 scales) and a qwen3 at 6 bits, this builds a tiny random checkpoint
with mlx-lm's own model classes and quantize, saves it as an MLX directory,
reloads it through mlx_lm.utils.load_model (the path users take), and records:
  * the prompt ids,
  * the logits mlx-lm's own generate_step computes (chunked prefill, then each
    decode step), greedy tokens,
  * the logits of one full forward at every position,
  * tokens sampled with a seed and every sampler option and penalty.
Everything lands in --out: <case>/model/, <case>/logits.safetensors and
<case>/goldens.json, plus manifest.json listing the cases. Goldens are
machine-specific: they are generated where they are checked, never committed.
"""
import argparse
import itertools
import json
import re
import shutil
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten, tree_map
from mlx_lm.generate import generate_step
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.sample_utils import make_logits_processors, make_sampler
from mlx_lm.utils import _get_classes, load_model, quantize_model, save_config, save_model

VOCAB = 512
DECODE_STEPS = 8

ARCHITECTURES = {
    "llama": dict(model_type="llama", hidden_size=64, num_hidden_layers=3,
                  intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                  rms_norm_eps=1e-5, vocab_size=VOCAB, rope_theta=10000.0,
                  tie_word_embeddings=True, max_position_embeddings=4096),
    # An untied head, biases everywhere and llama3 rope scaling.
    "llama_untied": dict(model_type="mistral", hidden_size=64, num_hidden_layers=2,
                         intermediate_size=128, num_attention_heads=4, num_key_value_heads=1,
                         head_dim=32, rms_norm_eps=1e-5, vocab_size=VOCAB,
                         rope_theta=500000.0, attention_bias=True, mlp_bias=True,
                         tie_word_embeddings=False, max_position_embeddings=4096,
                         rope_scaling=dict(rope_type="llama3", factor=8.0,
                                           low_freq_factor=1.0, high_freq_factor=4.0,
                                           original_max_position_embeddings=64)),
    "qwen2": dict(model_type="qwen2", hidden_size=64, num_hidden_layers=3,
                  intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                  rms_norm_eps=1e-6, vocab_size=VOCAB, rope_theta=1000000.0,
                  tie_word_embeddings=True, max_position_embeddings=4096),
    "qwen3": dict(model_type="qwen3", hidden_size=64, num_hidden_layers=3,
                  intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                  head_dim=32, rms_norm_eps=1e-6, vocab_size=VOCAB, rope_theta=1000000.0,
                  tie_word_embeddings=False, max_position_embeddings=4096,
                  rope_scaling=dict(rope_type="yarn", factor=4.0,
                                    original_max_position_embeddings=256)),
    "gemma3_text": dict(model_type="gemma3_text", hidden_size=64, num_hidden_layers=4,
                        intermediate_size=128, num_attention_heads=2, num_key_value_heads=1,
                        head_dim=32, rms_norm_eps=1e-6, vocab_size=VOCAB,
                        rope_theta=1000000.0, rope_local_base_freq=10000.0,
                        query_pre_attn_scalar=32, sliding_window=16,
                        sliding_window_pattern=2, max_position_embeddings=4096),
    # (1 + w) norms, exact gelu, embeddings times sqrt(hidden).
    "gemma": dict(model_type="gemma", hidden_size=64, num_hidden_layers=2,
                  intermediate_size=128, num_attention_heads=4, num_key_value_heads=1,
                  head_dim=16, rms_norm_eps=1e-6, vocab_size=VOCAB, rope_theta=10000.0),
    # Interleaved rope, q/k/v biases, an untied head.
    "helium": dict(model_type="helium", hidden_size=64, num_hidden_layers=2,
                   intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                   head_dim=16, rms_norm_eps=1e-8, vocab_size=VOCAB, attention_bias=True,
                   mlp_bias=False, rope_theta=100000.0, tie_word_embeddings=False,
                   max_position_embeddings=4096),
    # Every second layer without rotary positions (NoPE).
    "smollm3": dict(model_type="smollm3", hidden_size=64, num_hidden_layers=4,
                    intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                    rms_norm_eps=1e-6, vocab_size=VOCAB, rope_theta=5000000.0,
                    tie_word_embeddings=True, max_position_embeddings=4096,
                    no_rope_layer_interval=2),
    # llama under GPT-2 style tensor names, biases on every attention projection.
    "exaone": dict(model_type="exaone", hidden_size=64, num_layers=2, intermediate_size=128,
                   num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
                   rope_theta=10000.0, layer_norm_epsilon=1e-5, attention_bias=True,
                   tie_word_embeddings=False, max_position_embeddings=4096),
    # Interleaved rope; one bias switch for every projection.
    "ernie4_5": dict(model_type="ernie4_5", hidden_size=64, num_hidden_layers=2,
                     intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=16, rms_norm_eps=1e-5, vocab_size=VOCAB, rope_theta=500000.0,
                     use_bias=True, tie_word_embeddings=True, max_position_embeddings=4096),
    # q/k/v biases without an output bias, head_dim apart from hidden / heads
    # (untied: mlx-lm's tied head does not take a quantized embedding).
    "seed_oss": dict(model_type="seed_oss", hidden_size=64, num_hidden_layers=2,
                     intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=32, rms_norm_eps=1e-6, vocab_size=VOCAB, attention_bias=True,
                     attention_out_bias=False, rope_theta=10000000.0, tie_word_embeddings=False,
                     max_position_embeddings=4096),
    # qwen2 with mimo's defaults (rope_theta 10000, untied).
    "mimo": dict(model_type="mimo", hidden_size=64, num_hidden_layers=2, intermediate_size=128,
                 num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
                 vocab_size=VOCAB),
    # µP multipliers: embeddings, residual branches, attention scale, logits.
    "granite": dict(model_type="granite", hidden_size=64, num_hidden_layers=2,
                    intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                    rms_norm_eps=1e-6, vocab_size=VOCAB, logits_scaling=8.0,
                    attention_multiplier=0.015625, embedding_multiplier=12.0,
                    residual_multiplier=0.22, max_position_embeddings=4096,
                    attention_bias=False, mlp_bias=False, rope_theta=10000.0),
    # µP scales, and the hidden state divided before an untied head.
    "minicpm": dict(model_type="minicpm", hidden_size=64, dim_model_base=16,
                    num_hidden_layers=2, intermediate_size=128, num_attention_heads=4,
                    num_key_value_heads=2, rms_norm_eps=1e-5, vocab_size=VOCAB,
                    scale_depth=1.4, scale_emb=12.0, max_position_embeddings=4096),
    # A post-norm block, q/k norms over the whole projections.
    "olmo2": dict(model_type="olmo2", hidden_size=64, num_hidden_layers=2,
                  intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                  rms_norm_eps=1e-6, vocab_size=VOCAB, rope_theta=500000.0,
                  tie_word_embeddings=False, max_position_embeddings=4096),
    # olmo2's block with three sliding layers (plain rope) and a full one (yarn).
    "olmo3": dict(model_type="olmo3", hidden_size=64, num_hidden_layers=4,
                  intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                  rms_norm_eps=1e-6, vocab_size=VOCAB, max_position_embeddings=4096,
                  sliding_window=16, rope_theta=500000.0,
                  rope_scaling=dict(rope_type="yarn", factor=4.0,
                                    original_max_position_embeddings=256)),
    # Post-norm with per-head q/k norms; "LLLG": sliding layers with rope, a
    # global one without.
    "exaone4": dict(model_type="exaone4", hidden_size=64, num_hidden_layers=4,
                    intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                    rms_norm_eps=1e-5, vocab_size=VOCAB, max_position_embeddings=4096,
                    rope_theta=1000000.0, head_dim=16, tie_word_embeddings=True,
                    rope_scaling=None, sliding_window=16, sliding_window_pattern="LLLG"),
    # A fused gate_up_proj, half the head rotated (interleaved), sandwich norms.
    "glm4": dict(model_type="glm4", hidden_size=64, num_hidden_layers=2, intermediate_size=128,
                 num_attention_heads=4, attention_bias=True, head_dim=16, rms_norm_eps=1e-5,
                 vocab_size=VOCAB, num_key_value_heads=2, partial_rotary_factor=0.5,
                 rope_theta=10000.0, max_position_embeddings=4096),
    # Sandwich norms, softcapped attention and final logits (the final cap
    # bends these random logits, up to ~130, without flattening them all).
    "gemma2": dict(model_type="gemma2", hidden_size=64, num_hidden_layers=2,
                   intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                   head_dim=16, rms_norm_eps=1e-6, vocab_size=VOCAB, rope_theta=10000.0,
                   attn_logit_softcapping=10.0, final_logit_softcapping=100.0,
                   query_pre_attn_scalar=16.0),
    # LayerNorm with biases, a plain exact-gelu MLP.
    "starcoder2": dict(model_type="starcoder2", hidden_size=64, num_hidden_layers=2,
                       intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                       norm_epsilon=1e-5, vocab_size=VOCAB, rope_theta=100000.0,
                       tie_word_embeddings=False, max_position_embeddings=4096),
    # LayerNorm (1 + w), relu^2, partial rotary with linear scaling.
    "nemotron": dict(model_type="nemotron", hidden_size=64, hidden_act="relu2",
                     num_hidden_layers=2, intermediate_size=128, num_attention_heads=4,
                     num_key_value_heads=2, norm_eps=1e-5, vocab_size=VOCAB,
                     partial_rotary_factor=0.5, rope_theta=10000.0,
                     rope_scaling=dict(type="linear", factor=2.0), tie_word_embeddings=False,
                     max_position_embeddings=4096),
    # Parallel branches, LayerNorm with biases, per-head q/k LayerNorms,
    # interleaved rope, scaled logits.
    "cohere": dict(model_type="cohere", hidden_size=64, num_hidden_layers=2,
                   intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                   rope_theta=10000.0, vocab_size=VOCAB, layer_norm_eps=1e-5,
                   logit_scale=0.25, layer_norm_bias=True, use_qk_norm=True),
    # Sliding layers with rope, a global one without.
    "cohere2": dict(model_type="cohere2", hidden_size=64, head_dim=16, num_hidden_layers=4,
                    intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                    rope_theta=10000.0, vocab_size=VOCAB, layer_norm_eps=1e-5,
                    logit_scale=0.25, sliding_window=16, sliding_window_pattern=4),
    # Parallel residual, per-head q/k LayerNorms, partial rotary, float32
    # queries and keys.
    "stablelm": dict(model_type="stablelm", vocab_size=VOCAB, hidden_size=64,
                     num_attention_heads=4, num_hidden_layers=2, num_key_value_heads=2,
                     intermediate_size=128, rope_theta=10000.0, use_qkv_bias=True,
                     partial_rotary_factor=0.25, layer_norm_eps=1e-5,
                     use_parallel_residual=True, qk_layernorm=True),
    # Parallel branches, a plain gelu_approx MLP, float32 queries, a biased head.
    "phi": dict(model_type="phi", max_position_embeddings=4096, vocab_size=VOCAB,
                hidden_size=64, num_attention_heads=4, num_hidden_layers=2,
                num_key_value_heads=4, partial_rotary_factor=0.5, intermediate_size=128,
                layer_norm_eps=1e-5, rope_theta=10000.0),
    # Fused qkv_proj and gate_up_proj, longrope over the top-level original
    # context.
    "phi3": dict(model_type="phi3", hidden_size=64, num_hidden_layers=2, intermediate_size=128,
                 num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
                 vocab_size=VOCAB, rope_theta=10000.0, max_position_embeddings=1024,
                 original_max_position_embeddings=256, partial_rotary_factor=0.5,
                 rope_scaling=dict(type="longrope", short_factor=[1.0] * 4,
                                   long_factor=[1.0 + 0.5 * i for i in range(4)])),
    # internlm's names, a fused GQA wqkv, biases on the attention.
    "internlm2": dict(model_type="internlm2", hidden_size=64, num_hidden_layers=2,
                      intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                      rms_norm_eps=1e-5, vocab_size=VOCAB, bias=True, rope_theta=10000.0,
                      max_position_embeddings=4096,
                      rope_scaling=dict(type="linear", factor=2.0)),
    # Bias switches for the attention and the MLP.
    "internlm3": dict(model_type="internlm3", hidden_size=64, num_hidden_layers=2,
                      intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                      rms_norm_eps=1e-5, vocab_size=VOCAB, bias=True, qkv_bias=True,
                      rope_theta=10000.0, max_position_embeddings=4096),
    # q/k norms after rope, an NTK-alpha frequency table.
    "hunyuan_v1_dense": dict(model_type="hunyuan_v1_dense", vocab_size=VOCAB, hidden_size=64,
                             num_hidden_layers=2, intermediate_size=128, num_attention_heads=4,
                             num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=10000.0,
                             max_position_embeddings=4096, use_qk_norm=True,
                             rope_scaling=dict(alpha=1000.0, factor=1.0, type="dynamic"),
                             tie_word_embeddings=True),
    # Llama 4 query scaling past every 16 positions, yarn, a sliding layer.
    "ministral3": dict(model_type="ministral3", hidden_size=64, num_hidden_layers=2,
                       intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                       head_dim=16, rms_norm_eps=1e-5, vocab_size=VOCAB,
                       max_position_embeddings=4096, tie_word_embeddings=False,
                       layer_types=["sliding_attention", "full_attention"], sliding_window=16,
                       rope_parameters=dict(rope_type="yarn", rope_theta=1000000.0, factor=4.0,
                                            original_max_position_embeddings=16,
                                            llama_4_scaling_beta=0.1, beta_fast=32.0,
                                            beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0)),
    # A plain XieLU MLP, per-head q/k norms.
    "apertus": dict(model_type="apertus", hidden_size=64, num_hidden_layers=2,
                    intermediate_size=128, mlp_bias=False, num_attention_heads=4,
                    attention_bias=False, rms_norm_eps=1e-5, vocab_size=VOCAB,
                    num_key_value_heads=2, max_position_embeddings=4096, rope_theta=10000.0,
                    post_norm=False, qk_norm=True, tie_word_embeddings=False,
                    rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                      high_freq_factor=4.0,
                                      original_max_position_embeddings=64)),

    # Mixtures of experts: 8 experts, 2 per token (the 41-token prompt sorts
    # tokens by expert: 82 choices, past mlx-lm's threshold of 64).
    "mixtral": dict(model_type="mixtral", vocab_size=VOCAB, hidden_size=64,
                    intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                    num_experts_per_tok=2, num_key_value_heads=2, num_local_experts=8,
                    rms_norm_eps=1e-5, rope_theta=1000000.0, tie_word_embeddings=False),
    "qwen2_moe": dict(model_type="qwen2_moe", hidden_size=64, num_hidden_layers=2,
                      intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                      num_experts_per_tok=2, num_experts=8, moe_intermediate_size=64,
                      shared_expert_intermediate_size=64, rms_norm_eps=1e-6,
                      vocab_size=VOCAB, rope_theta=1000000.0),
    # A dense layer between two routed ones.
    "qwen3_moe": dict(model_type="qwen3_moe", hidden_size=64, num_hidden_layers=3,
                      intermediate_size=128, num_attention_heads=4, num_experts=8,
                      num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[1],
                      moe_intermediate_size=64, rms_norm_eps=1e-6, vocab_size=VOCAB,
                      num_key_value_heads=2, head_dim=16, rope_theta=1000000.0,
                      tie_word_embeddings=False, max_position_embeddings=4096,
                      norm_topk_prob=True),
    "olmoe": dict(model_type="olmoe", hidden_size=64, num_hidden_layers=2,
                  intermediate_size=64, num_attention_heads=4, rms_norm_eps=1e-5,
                  vocab_size=VOCAB, num_experts=8, num_experts_per_tok=2,
                  norm_topk_prob=False, num_key_value_heads=2, rope_theta=10000.0,
                  tie_word_embeddings=True),
    "phimoe": dict(model_type="phimoe", vocab_size=VOCAB, hidden_size=64,
                   intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=1024,
                   original_max_position_embeddings=256, rms_norm_eps=1e-5,
                   rope_scaling=dict(short_factor=[1.0] * 8,
                                     long_factor=[1.0 + 0.25 * i for i in range(8)],
                                     short_mscale=1.0, long_mscale=1.2),
                   num_local_experts=8, num_experts_per_tok=2, rope_theta=10000.0,
                   router_jitter_noise=0.01),
    "granitemoe": dict(model_type="granitemoe", hidden_size=64, num_hidden_layers=2,
                       intermediate_size=64, num_attention_heads=4, rms_norm_eps=1e-6,
                       vocab_size=VOCAB, logits_scaling=8.0, attention_multiplier=0.015625,
                       embedding_multiplier=12.0, residual_multiplier=0.22,
                       max_position_embeddings=4096, num_key_value_heads=2,
                       attention_bias=False, rope_theta=10000.0, num_local_experts=8,
                       num_experts_per_tok=2),
    # Experts from layer 1 on, one shared expert.
    "ernie4_5_moe": dict(model_type="ernie4_5_moe", hidden_size=64, intermediate_size=128,
                         max_position_embeddings=4096, num_attention_heads=4,
                         num_key_value_heads=2, num_hidden_layers=3, rms_norm_eps=1e-5,
                         vocab_size=VOCAB, rope_theta=500000.0, use_bias=False,
                         tie_word_embeddings=False, head_dim=16, moe_num_experts=8, moe_k=2,
                         moe_intermediate_size=64, moe_layer_start_index=1,
                         moe_layer_interval=1, moe_num_shared_experts=1,
                         moe_gate_act="softmax"),
    # Grouped sigmoid routing with a correction bias, a shared expert, a
    # dense first layer.
    "glm4_moe": dict(model_type="glm4_moe", vocab_size=VOCAB, hidden_size=64,
                     intermediate_size=128, max_position_embeddings=4096,
                     moe_intermediate_size=64, norm_topk_prob=True, num_attention_heads=4,
                     n_group=2, head_dim=16, topk_group=1, n_shared_experts=1,
                     n_routed_experts=8, routed_scaling_factor=2.5, num_experts_per_tok=2,
                     first_k_dense_replace=1, num_hidden_layers=3, num_key_value_heads=2,
                     rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None,
                     use_qk_norm=True, tie_word_embeddings=False, attention_bias=True,
                     partial_rotary_factor=0.5),
    "dots1": dict(model_type="dots1", hidden_size=64, num_hidden_layers=3,
                  intermediate_size=128, num_attention_heads=4, rms_norm_eps=1e-5,
                  vocab_size=VOCAB, max_position_embeddings=4096, num_key_value_heads=2,
                  first_k_dense_replace=1, moe_intermediate_size=64, n_routed_experts=8,
                  n_shared_experts=1, norm_topk_prob=True, num_experts_per_tok=2,
                  rope_theta=10000.0, routed_scaling_factor=2.0),

    # A hybrid: gated short convolutions (with biases) in layers 0 and 2,
    # attention with per-head q/k norms in 1 and 3; the MLP's width from
    # lfm2's auto-adjust (int(2 * 192 / 3) rounded up to 32: 128).
    "lfm2": dict(model_type="lfm2", vocab_size=VOCAB, hidden_size=64, num_hidden_layers=4,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                 norm_eps=1e-5, conv_bias=True, conv_L_cache=3, block_dim=64,
                 block_ff_dim=192, block_multiple_of=32, block_ffn_dim_multiplier=1.0,
                 block_auto_adjust_ff_dim=True, rope_theta=1000000.0,
                 layer_types=["conv", "full_attention", "conv", "full_attention"]),
    # Gated DeltaNet layers (every layer but each full_attention_interval-th)
    # with more value than key heads, and gated attention with partial rope.
    "qwen3_5": dict(model_type="qwen3_5", vocab_size=VOCAB, hidden_size=64, intermediate_size=128,
                    num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                    rms_norm_eps=1e-6, max_position_embeddings=4096, linear_num_value_heads=4,
                    linear_num_key_heads=2, linear_key_head_dim=32, linear_value_head_dim=16,
                    linear_conv_kernel_dim=4, full_attention_interval=2,
                    tie_word_embeddings=False,
                    rope_parameters={"type": "default", "rope_theta": 100000.0,
                                     "partial_rotary_factor": 0.25}),
    # qwen3_5 with qwen3_next's sparse block (a gated shared expert) in every
    # layer; mlx-lm quantizes its routers at 8 bits.
    "qwen3_5_moe": dict(model_type="qwen3_5_moe", vocab_size=VOCAB, hidden_size=64,
                        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                        head_dim=32, rms_norm_eps=1e-6, max_position_embeddings=4096,
                        linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=32,
                        linear_value_head_dim=16, linear_conv_kernel_dim=4,
                        full_attention_interval=2, tie_word_embeddings=True, num_experts=8,
                        num_experts_per_tok=2, moe_intermediate_size=64,
                        shared_expert_intermediate_size=64, norm_topk_prob=True,
                        rope_parameters={"type": "default", "rope_theta": 100000.0,
                                         "partial_rotary_factor": 0.25}),
    # qwen3_5_moe with the DeltaNet's projections fused per key head
    # (in_proj_qkvz, in_proj_ba), a dense MLP in layer 0 (mlp_only_layers),
    # top-k weights not renormalised, and rope from plain fields.
    "qwen3_next": dict(model_type="qwen3_next", vocab_size=VOCAB, hidden_size=64,
                       intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=32, rms_norm_eps=1e-6,
                       max_position_embeddings=4096, linear_num_value_heads=4,
                       linear_num_key_heads=2, linear_key_head_dim=32,
                       linear_value_head_dim=16, linear_conv_kernel_dim=4,
                       full_attention_interval=2, tie_word_embeddings=False, num_experts=8,
                       num_experts_per_tok=2, moe_intermediate_size=64,
                       shared_expert_intermediate_size=64, decoder_sparse_step=1,
                       mlp_only_layers=[0], rope_theta=100000.0, partial_rotary_factor=0.25),
    # Gemma 4's small-model shape: per-layer inputs, two sliding layers then
    # a full one with a wider head and proportional rope over a quarter of
    # it, the last two layers sharing the keys of layers 3 and 2 (with
    # double-wide MLPs), final logits softcapped.
    "gemma4_text": dict(model_type="gemma4_text", vocab_size=VOCAB, hidden_size=64,
                        num_hidden_layers=6, intermediate_size=64, num_attention_heads=2,
                        num_key_value_heads=1, head_dim=16, global_head_dim=32,
                        rms_norm_eps=1e-6, vocab_size_per_layer_input=VOCAB,
                        hidden_size_per_layer_input=16, num_kv_shared_layers=2,
                        sliding_window=16, sliding_window_pattern=3,
                        max_position_embeddings=4096, final_logit_softcapping=30.0,
                        use_double_wide_mlp=True, tie_word_embeddings=True),
    # Gemma 4's larger-model shape: experts beside every MLP (mlx-lm
    # quantizes the routers at 8 bits), full layers whose key projection
    # gives the values too (attention_k_eq_v) with more key heads, no
    # per-layer inputs, no shared layers, an untied head.
    "gemma4_text_moe": dict(model_type="gemma4_text", vocab_size=VOCAB, hidden_size=64,
                            num_hidden_layers=4, intermediate_size=64, num_attention_heads=4,
                            num_key_value_heads=1, num_global_key_value_heads=2, head_dim=16,
                            global_head_dim=32, attention_k_eq_v=True, rms_norm_eps=1e-6,
                            hidden_size_per_layer_input=0, num_kv_shared_layers=0,
                            sliding_window=16, sliding_window_pattern=2,
                            max_position_embeddings=4096, final_logit_softcapping=30.0,
                            enable_moe_block=True, num_experts=8, top_k_experts=2,
                            moe_intermediate_size=64, tie_word_embeddings=False),
    # The multimodal wrapper: gemma4_text's shape under text_config, its
    # tensors under language_model.model.
    "gemma4": dict(model_type="gemma4", vocab_size=VOCAB,
                   text_config=dict(model_type="gemma4_text", vocab_size=VOCAB, hidden_size=64,
                                    num_hidden_layers=4, intermediate_size=64,
                                    num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                                    global_head_dim=32, rms_norm_eps=1e-6,
                                    vocab_size_per_layer_input=VOCAB,
                                    hidden_size_per_layer_input=16, num_kv_shared_layers=1,
                                    sliding_window=16, sliding_window_pattern=2,
                                    max_position_embeddings=4096,
                                    final_logit_softcapping=30.0)),}

QUANTIZATIONS = {"bf16": None, "q4": (64, 4), "q8": (32, 8)}
# MLX's CPU gather_mm multiplies float32 only, so mlx-lm runs a mixture of
# experts with dense experts in float32 (and quantized ones, through
# gather_qmm, in bfloat16): the dense case of these is float32.
MOE_ARCHITECTURES = {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "phimoe", "granitemoe",
                     "ernie4_5_moe", "glm4_moe", "dots1", "qwen3_5_moe", "qwen3_next",
                     "gemma4_text_moe"}


def case_quantizations(arch, names=None):
    """(case suffix, quantization, dtype) of an architecture's cases."""
    cases = []
    for name in names or QUANTIZATIONS:
        if name == "bf16" and arch in MOE_ARCHITECTURES:
            cases.append(("f32", None, mx.float32))
        else:
            cases.append((name, QUANTIZATIONS[name], mx.bfloat16))
    return cases
# A float32 checkpoint quantized at group 32 has float32 scales and biases,
# as the converter writes GGUF K-quants (tested for one architecture).
FLOAT32_CASE = ("qwen2", "q4f32", (32, 4))
# 6-bit weights (the converter's form of GGUF Q6_K and mlx-community's
# 6-bit checkpoints), tested for one architecture.
SIX_BIT_CASE = ("qwen3", "q6", (64, 6))

# Prompt lengths per case: short, longer than gemma's 16-token window, and
# (for two models) longer than the 2048-token prefill chunk.
PROMPTS = {"short": 7, "window": 41}
# qwen3_5: its recurrent state carried across prefill chunks.
LONG_PROMPT_CASES = {"llama_bf16", "qwen3_5_bf16"}
LONG_PROMPT = 2100

SAMPLING = [
    dict(name="temp", temp=0.8, seed=11),
    dict(name="top_p", temp=0.9, top_p=0.8, seed=12),
    dict(name="top_k", temp=1.0, top_k=20, seed=13),
    dict(name="min_p", temp=0.7, min_p=0.1, seed=14),
    dict(name="all", temp=1.2, top_p=0.95, min_p=0.02, top_k=50, seed=15,
         repetition_penalty=1.3, presence_penalty=0.4, frequency_penalty=0.3,
         logit_bias={"5": 2.5, "17": -3.0}),
]


def checkpoint_seed(index):
    """The seed of the index-th architecture's checkpoints (batch_goldens
    builds the same ones)."""
    return 100 * index + 7


# Norms that compute with 1 + w store w around 0, as trained checkpoints do
# (nemotron's LayerNorm1P); around 1 they would double every activation
# before relu^2.
NORMS_STORED_MINUS_ONE = {"nemotron"}


# Gemma 4 multiplies its embeddings by sqrt(hidden) and adds branches of
# unit scale after norms: unit-variance embeddings would drown every branch
# (the output would be the input token), so its embeddings are scaled down
# to give the residual stream unit scale.
EMBEDDING_STD = {"gemma4_text": 64 ** -0.5, "gemma4_text_moe": 64 ** -0.5, "gemma4": 64 ** -0.5}
# Gemma 4 attends with a scale of 1 after q and k norms: norms around 1
# would give attention logits of sqrt(head_dim) spread, so peaked that
# bfloat16 rounding flips which keys win (stock 12 % of the largest logit
# away from float32). Trained checkpoints learn small q/k norms.
QK_NORM_CENTER = {"gemma4_text": 0.4, "gemma4_text_moe": 0.4, "gemma4": 0.4}


def randomize(model, seed, norm_center=1.0, embedding_std=1.0, qk_norm_center=None):
    """Random weights, deterministic per case, scaled like a trained network
    (unit-variance activations, norms around 1 so they matter): a badly
    scaled random network is chaotic and would make the fast path's
    rounding differences look like model errors."""
    mx.random.seed(seed)
    params = tree_flatten(model.parameters())
    new = []
    for name, value in params:
        # Norms and embeddings by llama's names, or GPT-2's (exaone: ln_1, wte).
        if qk_norm_center and name.endswith(("q_norm.weight", "k_norm.weight")):
            new.append((name, qk_norm_center * (1.0 + 0.1 * mx.random.normal(value.shape))))
        elif (name.endswith("norm.weight") or "layernorm" in name
                or re.search(r"(^|\.)ln_\w+\.weight$", name)):
            new.append((name, norm_center + 0.1 * mx.random.normal(value.shape)))
        elif ("embed_tokens" in name or "tok_embeddings" in name
              or name.startswith("transformer.wte.")):
            new.append((name, embedding_std * mx.random.normal(value.shape)))
        elif name.endswith(("layer_scalar", "router.scale", "per_expert_scale")):
            # Gemma 4's learned scales multiply whole activations.
            new.append((name, 1.0 + 0.1 * mx.random.normal(value.shape)))
        elif ".act_fn." in name:  # XieLU's learned scalars keep their initial values
            new.append((name, value))
        elif name.endswith(("conv.weight", "conv1d.weight")):  # [channels, K, in / groups]: fan-in K x in
            new.append((name, mx.random.normal(value.shape) * (value.shape[1] * value.shape[2]) ** -0.5))
        elif value.ndim in (2, 3):  # projections, and the experts' stacked ones
            new.append((name, mx.random.normal(value.shape) * value.shape[-1] ** -0.5))
        else:  # biases
            new.append((name, 0.1 * mx.random.normal(value.shape)))
    model.load_weights(new)


def build_checkpoint(case_dir, arch, config, quant, seed, dtype=mx.bfloat16):
    model_class, args_class = _get_classes(config)
    model = model_class(args_class.from_dict(config))
    randomize(model, seed, 0.0 if arch in NORMS_STORED_MINUS_ONE else 1.0,
              EMBEDDING_STD.get(arch, 1.0), QK_NORM_CENTER.get(arch))
    # What mlx-lm's converter keeps in float32 (qwen3_5's A_log) stays so.
    keep = getattr(model, "cast_predicate", None)
    kept = [(k, v) for k, v in tree_flatten(model.parameters()) if keep and not keep(k)]
    model.set_dtype(dtype)
    if kept:
        model.load_weights(kept, strict=False)
    config = dict(config)
    if quant is not None:
        group_size, bits = quant
        predicate = None
        if arch == "llama":  # exercise per-module overrides
            def predicate(path, module):
                if path.endswith("layers.0.mlp.down_proj"):
                    return {"group_size": 32, "bits": 8 if bits != 8 else 4}
                if path.endswith("layers.1.self_attn.v_proj"):
                    return False
                return True
        model, config = quantize_model(model, config, group_size, bits, quant_predicate=predicate)
    model_dir = case_dir / "model"
    save_model(model_dir, model)
    save_config(config, model_dir / "config.json")
    return model_dir


def record_generation(model, prompt, sampler=None, processors=None):
    recorded = []

    def recorder(tokens, logits):
        recorded.append(logits)
        return logits

    chain = list(processors or []) + [recorder]
    tokens = []
    for token, _ in generate_step(mx.array(prompt), model, max_tokens=DECODE_STEPS,
                                  sampler=sampler, logits_processors=chain):
        tokens.append(int(token))
    return tokens, recorded


def make_case(out, arch, quant_name, config, seed, quant, dtype=mx.bfloat16):
    name = f"{arch}_{quant_name}"
    case_dir = out / name
    shutil.rmtree(case_dir, ignore_errors=True)
    case_dir.mkdir(parents=True)
    model_dir = build_checkpoint(case_dir, arch, config, quant, seed, dtype)
    model, _ = load_model(model_dir)

    prompts = dict(PROMPTS)
    if name in LONG_PROMPT_CASES:
        prompts["long"] = LONG_PROMPT
    key = mx.random.key(seed + 1000)
    arrays, goldens = {}, {"name": name, "architecture": arch, "prompts": {}}
    for prompt_name, length in prompts.items():
        key, subkey = mx.random.split(key)
        prompt = mx.random.randint(0, VOCAB, (length,), key=subkey).tolist()
        entry = {"ids": prompt}
        greedy, logits = record_generation(model, prompt)
        entry["greedy"] = greedy
        # Logits after the penalties/bias processors are the recorder's input
        # only when those run first; greedy runs have none.
        arrays[f"{prompt_name}.generation"] = mx.concatenate(logits, axis=0)
        full = model(mx.array(prompt)[None], cache=make_prompt_cache(model))
        arrays[f"{prompt_name}.forward"] = full[0]
        entry["sampled"] = []
        for params in SAMPLING:
            sampler = make_sampler(temp=params["temp"], top_p=params.get("top_p", 0.0),
                                   min_p=params.get("min_p", 0.0), top_k=params.get("top_k", 0))
            bias = {int(k): v for k, v in params.get("logit_bias", {}).items()} or None
            processors = make_logits_processors(
                logit_bias=bias, repetition_penalty=params.get("repetition_penalty"),
                presence_penalty=params.get("presence_penalty"),
                frequency_penalty=params.get("frequency_penalty"))
            mx.random.seed(params["seed"])
            tokens, _ = record_generation(model, prompt, sampler, processors)
            entry["sampled"].append(dict(params, tokens=tokens))
        goldens["prompts"][prompt_name] = entry
    mx.eval(arrays)
    mx.save_safetensors(str(case_dir / "logits.safetensors"), arrays)
    (case_dir / "goldens.json").write_text(json.dumps(goldens))
    return name


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--only", help="comma-separated case names")
    # Where kernels are compiled at run time (MLX's CUDA backend), one
    # process per shard spreads the compiling over the machine's cores.
    parser.add_argument("--shard", default="0/1",
                        help="K/N: make only every N-th case, from the K-th (manifest.K.json)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    shard, shards = (int(part) for part in args.shard.split("/"))
    counter = itertools.count()

    def wanted(name):
        return next(counter) % shards == shard and (not only or name in only)

    cases = []
    for index, (arch, config) in enumerate(ARCHITECTURES.items()):
        for quant_name, quant, dtype in case_quantizations(arch):
            if not wanted(f"{arch}_{quant_name}"):
                continue
            cases.append(make_case(args.out, arch, quant_name, config, checkpoint_seed(index),
                                   quant, dtype))
            print("wrote", cases[-1], flush=True)
    arch, quant_name, quant = FLOAT32_CASE
    if wanted(f"{arch}_{quant_name}"):
        cases.append(make_case(args.out, arch, quant_name, ARCHITECTURES[arch], 991, quant,
                               mx.float32))
        print("wrote", cases[-1], flush=True)
    arch, quant_name, quant = SIX_BIT_CASE
    if wanted(f"{arch}_{quant_name}"):
        cases.append(make_case(args.out, arch, quant_name, ARCHITECTURES[arch], 993, quant))
        print("wrote", cases[-1], flush=True)
    manifest = "manifest.json" if shards == 1 else f"manifest.{shard}.json"
    (args.out / manifest).write_text(json.dumps({"cases": cases, "decode_steps": DECODE_STEPS}))


if __name__ == "__main__":
    main()
