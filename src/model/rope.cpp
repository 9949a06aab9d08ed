#include "model/rope.h"

#include <mlx/fast.h>
#include <mlx/ops.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "io/error.h"
#include "kernels/kernels.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

// Config numbers stay doubles, as Python floats do, until they meet an array.
double number(const nlohmann::json& object, const char* key, double fallback) {
  return object.contains(key) && object[key].is_number() ? object[key].get<double>() : fallback;
}

double require_number(const nlohmann::json& object, const char* key, const std::string& type) {
  if (!object.contains(key) || !object[key].is_number())
    throw Error("rope_scaling of type " + type + " needs a numeric '" + key + "'");
  return object[key].get<double>();
}

// base ** (arange(0, dims, 2, float32) / dims), as a float32 [dims/2] array.
mx::array base_powers(float base, int dims) {
  auto exponents = mx::divide(mx::arange(0, dims, 2, mx::float32), mx::array(float(dims)));
  return mx::power(mx::array(base), exponents);
}

RotaryEmbedding llama3(int dims, float base, bool traditional, const nlohmann::json& scaling) {
  double factor = require_number(scaling, "factor", "llama3");
  double low_freq_factor = number(scaling, "low_freq_factor", 1.0);
  double high_freq_factor = number(scaling, "high_freq_factor", 4.0);
  double old_context = number(scaling, "original_max_position_embeddings", 8192.0);
  float low_freq_wavelen = float(old_context / low_freq_factor);
  float high_freq_wavelen = float(old_context / high_freq_factor);

  // Integer arange divided by an int promotes to float32, as in mlx-lm.
  auto exponents = mx::divide(mx::arange(0, dims, 2), mx::array(dims));
  auto freqs = mx::power(mx::array(base), exponents);
  auto wavelens = mx::multiply(mx::array(float(2 * std::numbers::pi)), freqs);
  freqs = mx::where(mx::greater(wavelens, mx::array(low_freq_wavelen)),
                    mx::multiply(freqs, mx::array(float(factor))), freqs);
  auto is_medium = mx::logical_and(mx::greater(wavelens, mx::array(high_freq_wavelen)),
                                   mx::less(wavelens, mx::array(low_freq_wavelen)));
  auto smooth = mx::divide(mx::subtract(mx::divide(mx::array(float(old_context)), wavelens),
                                        mx::array(float(low_freq_factor))),
                           mx::array(float(high_freq_factor - low_freq_factor)));
  auto smooth_freqs = mx::divide(
      freqs,
      mx::add(mx::divide(mx::subtract(mx::array(1.0f), smooth), mx::array(float(factor))), smooth));
  RotaryEmbedding rope{dims, traditional, std::nullopt, 1.0f, std::nullopt, std::nullopt};
  rope.freqs = mx::where(is_medium, smooth_freqs, freqs);
  return rope;
}

RotaryEmbedding yarn(int dims, float base, bool traditional, const nlohmann::json& scaling) {
  double factor = require_number(scaling, "factor", "yarn");
  double original = number(scaling, "original_max_position_embeddings", 4096.0);
  double beta_fast = number(scaling, "beta_fast", 32.0);
  double beta_slow = number(scaling, "beta_slow", 1.0);
  double mscale = number(scaling, "mscale", 1.0);
  double mscale_all_dim = number(scaling, "mscale_all_dim", 0.0);
  auto correction_dim = [&](double rotations) {
    return (dims * std::log(original / (rotations * 2 * std::numbers::pi))) /
           (2 * std::log(double(base)));
  };
  auto get_mscale = [&](double m) { return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; };
  double low = std::max(std::floor(correction_dim(beta_fast)), 0.0);
  double high = std::min(std::ceil(correction_dim(beta_slow)), double(dims - 1));
  if (low == high) high += 0.001;  // avoid a zero-width ramp, as mlx-lm does

  auto ramp = mx::divide(mx::subtract(mx::arange(dims / 2, mx::float32), mx::array(float(low))),
                         mx::array(float(high - low)));
  auto freq_mask = mx::subtract(mx::array(1.0f), mx::clip(ramp, mx::array(0.0f), mx::array(1.0f)));
  auto freq_extra = base_powers(base, dims);
  auto freq_inter = mx::multiply(mx::array(float(factor)), freq_extra);
  auto freqs =
      mx::divide(mx::multiply(freq_inter, freq_extra),
                 mx::add(mx::multiply(freq_inter, freq_mask),
                         mx::multiply(freq_extra, mx::subtract(mx::array(1.0f), freq_mask))));
  RotaryEmbedding rope{dims, traditional, std::nullopt, 1.0f, freqs, std::nullopt};
  double ratio = get_mscale(mscale) / get_mscale(mscale_all_dim);
  if (ratio != 1.0) rope.input_scale = static_cast<float>(ratio);
  return rope;
}

RotaryEmbedding longrope(int dims, float base, const nlohmann::json& scaling,
                         std::optional<int> max_position_embeddings) {
  if (!scaling.contains("long_factor") || !scaling.contains("original_max_position_embeddings"))
    throw Error(
        "rope_scaling of type longrope needs long_factor and original_max_position_embeddings");
  double original = scaling["original_max_position_embeddings"].get<double>();
  const auto& long_factor = scaling["long_factor"];
  mx::array factors = long_factor.is_array()
                          ? mx::array(long_factor.get<std::vector<float>>().data(),
                                      {static_cast<int>(long_factor.size())}, mx::float32)
                          : mx::array(long_factor.get<float>());
  if (long_factor.is_array() && static_cast<int>(long_factor.size()) != dims / 2)
    throw Error("rope_scaling long_factor has " + std::to_string(long_factor.size()) +
                " entries, expected " + std::to_string(dims / 2));
  double factor = max_position_embeddings.value_or(131072) / original;
  // mlx-lm's initialize_rope never passes a long_mscale to SuScaledRoPE, so
  // a config's value is not read here either.
  double input_scale = 1.0;
  if (factor > 1.0) input_scale = std::sqrt(1 + std::log(factor) / std::log(original));
  RotaryEmbedding rope{dims, false, std::nullopt, 1.0f, std::nullopt, float(input_scale)};
  rope.freqs = mx::multiply(factors, base_powers(base, dims));
  return rope;
}

// Gemma 4's full-attention layers (rope_type "proportional"): the leading
// partial_rotary_factor of the dims turn at factor * base ** (i / dims),
// the exponents over the whole head; the rest get infinite periods, so
// they do not turn at all.
RotaryEmbedding proportional(int dims, float base, bool traditional,
                             const nlohmann::json& scaling) {
  const int rotated = static_cast<int>(dims * number(scaling, "partial_rotary_factor", 1.0));
  if (rotated < 0 || rotated > dims)
    throw Error("rope_scaling of type proportional turns " + std::to_string(rotated) + " of " +
                std::to_string(dims) + " dims");
  auto exponents = mx::divide(mx::arange(0, rotated, 2, mx::float32), mx::array(float(dims)));
  auto turning = mx::multiply(mx::array(float(number(scaling, "factor", 1.0))),
                              mx::power(mx::array(base), exponents));
  auto still = mx::full({(dims - rotated) / 2}, std::numeric_limits<float>::infinity());
  RotaryEmbedding rope{dims, traditional, std::nullopt, 1.0f, std::nullopt, std::nullopt};
  rope.freqs = mx::concatenate({turning, still});
  return rope;
}

// The base DynamicNTKScalingRoPE (mlx-lm's rope_utils) uses for `length`
// new tokens after `offset`, in Python's double arithmetic.
float dynamic_base(double base, const RotaryEmbedding::Dynamic& dynamic, int dims, int length,
                   int offset) {
  const double max_positions = dynamic.max_positions;
  const double sequence = std::max(double(length + offset), max_positions);
  return float(base * std::pow(dynamic.factor * sequence / max_positions - (dynamic.factor - 1),
                               double(dims) / double(dims - 2)));
}

}  // namespace

RotaryEmbedding make_frequency_table_rope(int dims, float base, bool traditional) {
  RotaryEmbedding rope{dims, traditional, std::nullopt, 1.0f, std::nullopt, std::nullopt};
  rope.freqs = base_powers(base, dims);
  return rope;
}

mx::array RotaryEmbedding::apply(const mx::array& x, int offset) const {
  if (dims == 0) return x;
  auto call_base = base;
  if (dynamic && base) call_base = dynamic_base(*base, *dynamic, dims, x.shape(-2), offset);
  auto input = x;
  if (input_scale) {
    auto factor = mx::array(*input_scale, x.dtype());
    if (dims == x.shape(-1)) {
      input = mx::multiply(x, factor);
    } else {
      auto start = mx::Shape(x.ndim(), 0);
      auto stop = x.shape();
      stop.back() = dims;
      auto part = mx::multiply(mx::slice(x, start, stop), factor);
      input = mx::slice_update(x, part, start, stop);
    }
  }
  if (fast_kernel)
    return kernels::rope_fast(input, dims, traditional, call_base, scale, offset, freqs);
  return mx::fast::rope(input, dims, traditional, call_base, scale, offset, freqs);
}

RotaryEmbedding make_rotary_embedding(int dims, float base, bool traditional,
                                      const nlohmann::json& scaling,
                                      std::optional<int> max_position_embeddings) {
  std::string type = "default";
  if (scaling.is_object()) {
    if (scaling.contains("type") && scaling["type"].is_string())
      type = scaling["type"].get<std::string>();
    else if (scaling.contains("rope_type") && scaling["rope_type"].is_string())
      type = scaling["rope_type"].get<std::string>();
  }
  if (type == "default" || type == "linear") {
    float scale = 1.0f;
    if (type == "linear") scale = float(1.0 / require_number(scaling, "factor", "linear"));
    return RotaryEmbedding{dims, traditional, base, scale, std::nullopt, std::nullopt};
  }
  if (type == "dynamic") {
    if (!max_position_embeddings || *max_position_embeddings <= 0)
      throw Error("rope_scaling of type dynamic needs max_position_embeddings");
    RotaryEmbedding rope{dims, traditional, base, 1.0f, std::nullopt, std::nullopt};
    rope.dynamic = RotaryEmbedding::Dynamic{require_number(scaling, "factor", "dynamic"),
                                            *max_position_embeddings};
    return rope;
  }
  if (type == "llama3") return llama3(dims, base, traditional, scaling);
  if (type == "yarn" || type == "deepseek_yarn" || type == "telechat3-yarn")
    return yarn(dims, base, traditional, scaling);
  if (type == "longrope" || type == "su")
    return longrope(dims, base, scaling, max_position_embeddings);
  if (type == "proportional") return proportional(dims, base, traditional, scaling);
  throw Error("unsupported rope_scaling type '" + type +
              "' (supported: default, linear, dynamic, llama3, yarn, longrope, proportional)");
}

}  // namespace mlx_cpp
