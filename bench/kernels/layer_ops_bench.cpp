// rms_norm_fast, rope_fast, attention_fast and gated_activation_fast vs the
// stock ops mlx-lm uses, on SmolLM2-135M (hidden 576, 9 query / 3 KV heads
// of 64, MLP 1536) and Qwen2.5-1.5B (hidden 1536, 12 / 2 heads of 128, MLP
// 8960) shapes, bfloat16. Rows: 1 (decode) and 512 (prefill).
#include <cmath>
#include <string>

#include "bench_common.h"
#include "kernels/kernels.h"

namespace mlx_cpp::kernels::bench {
namespace {

namespace mx = mlx::core;

struct Model {
  const char* name;
  int hidden, q_heads, kv_heads, head_dim, mlp;
};

const Model kModels[] = {{"smollm2", 576, 9, 3, 64, 1536},
                         {"qwen2.5-1.5b", 1536, 12, 2, 128, 8960}};

void register_rms_norm(const Model& m, int rows) {
  register_pair(std::string("rms_norm/") + m.name + "/M" + std::to_string(rows), [=] {
    auto x = random_input({1, rows, m.hidden}, mx::bfloat16, 1.0f, 1);
    auto w = random_input({m.hidden}, mx::bfloat16, 1.0f, 2);
    return OpPair{[=] { return mx::fast::rms_norm(x, w, 1e-5f); },
                  [=] { return rms_norm_fast(x, w, 1e-5f); }};
  });
}

void register_rope(const Model& m, int rows) {
  register_pair(std::string("rope/") + m.name + "/T" + std::to_string(rows), [=] {
    auto x = random_input({1, m.q_heads, rows, m.head_dim}, mx::bfloat16, 1.0f, 3);
    return OpPair{[=] { return mx::fast::rope(x, m.head_dim, false, 10000.0f, 1.0f, 100); },
                  [=] { return rope_fast(x, m.head_dim, false, 10000.0f, 1.0f, 100); }};
  });
}

// One query row over a cache of `cache_length` keys (decode).
void register_decode_attention(const Model& m, int cache_length) {
  register_pair(
      std::string("attention/") + m.name + "/decode/S" + std::to_string(cache_length), [=] {
        auto q = random_input({1, m.q_heads, 1, m.head_dim}, mx::bfloat16, 1.0f, 4);
        auto k = random_input({1, m.kv_heads, cache_length, m.head_dim}, mx::bfloat16, 1.0f, 5);
        auto v = random_input({1, m.kv_heads, cache_length, m.head_dim}, mx::bfloat16, 1.0f, 6);
        float scale = 1.0f / std::sqrt(static_cast<float>(m.head_dim));
        return OpPair{[=] { return mx::fast::scaled_dot_product_attention(q, k, v, scale); },
                      [=] { return attention_fast(q, k, v, scale); }};
      });
}

// A causal prompt of `rows` tokens (prefill, empty cache).
void register_prefill_attention(const Model& m, int rows) {
  register_pair(std::string("attention/") + m.name + "/prefill/L" + std::to_string(rows), [=] {
    auto q = random_input({1, m.q_heads, rows, m.head_dim}, mx::bfloat16, 1.0f, 4);
    auto k = random_input({1, m.kv_heads, rows, m.head_dim}, mx::bfloat16, 1.0f, 5);
    auto v = random_input({1, m.kv_heads, rows, m.head_dim}, mx::bfloat16, 1.0f, 6);
    float scale = 1.0f / std::sqrt(static_cast<float>(m.head_dim));
    return OpPair{[=] { return mx::fast::scaled_dot_product_attention(q, k, v, scale, "causal"); },
                  [=] { return attention_fast(q, k, v, scale, true); }};
  });
}

void register_activation(const Model& m, int rows) {
  register_pair(std::string("swiglu/") + m.name + "/M" + std::to_string(rows), [=] {
    auto gate = random_input({1, rows, m.mlp}, mx::bfloat16, 2.0f, 7);
    auto up = random_input({1, rows, m.mlp}, mx::bfloat16, 1.0f, 8);
    return OpPair{[=] { return mx::multiply(mx::multiply(gate, mx::sigmoid(gate)), up); },
                  [=] { return gated_activation_fast(gate, up, GatedActivation::silu); }};
  });
}

[[maybe_unused]] const bool registered = [] {
  for (const auto& model : kModels) {
    for (int rows : {1, 512}) register_rms_norm(model, rows);
    for (int rows : {1, 512}) register_rope(model, rows);
    for (int length : {512, 4096}) register_decode_attention(model, length);
    register_prefill_attention(model, 512);
    for (int rows : {1, 512}) register_activation(model, rows);
  }
  return true;
}();

}  // namespace
}  // namespace mlx_cpp::kernels::bench
