#include "golden_case.h"

#include <mlx/io.h>
#include <mlx/ops.h>
#include <mlx/utils.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace mlx_cpp::testing {
namespace mx = mlx::core;

std::vector<std::string> moe_architectures() {
  return {"mixtral",    "qwen2_moe",    "qwen3_moe", "olmoe", "phimoe",
          "granitemoe", "ernie4_5_moe", "glm4_moe",  "dots1"};
}

std::vector<std::string> hybrid_architectures() {
  return {"lfm2", "qwen3_5", "qwen3_5_moe", "qwen3_next"};
}

std::vector<std::string> dedicated_architectures() {
  return {"gemma4_text", "gemma4_text_moe", "gemma4"};
}

std::string unquantized_case(const std::string& arch) {
  const auto moe = moe_architectures();
  const bool routed = std::find(moe.begin(), moe.end(), arch) != moe.end() ||
                      arch == "qwen3_5_moe" || arch == "qwen3_next" || arch == "gemma4_text_moe";
  return routed ? "f32" : "bf16";
}

std::vector<std::string> generic_model_golden_cases() {
  auto names = model_golden_cases();
  for (const auto& arch : dedicated_architectures())
    std::erase_if(names,
                  [&arch](const std::string& name) { return name.rfind(arch + "_", 0) == 0; });
  return names;
}

std::vector<std::string> model_golden_cases() {
  std::vector<std::string> names;
  for (const char* arch :
       {"llama",   "llama_untied", "qwen2",     "qwen3",     "gemma3_text",      "gemma",
        "helium",  "smollm3",      "exaone",    "ernie4_5",  "seed_oss",         "mimo",
        "granite", "minicpm",      "olmo2",     "olmo3",     "exaone4",          "glm4",
        "gemma2",  "starcoder2",   "nemotron",  "cohere",    "cohere2",          "stablelm",
        "phi",     "phi3",         "internlm2", "internlm3", "hunyuan_v1_dense", "ministral3",
        "apertus"})
    for (const char* quant : {"bf16", "q4", "q8"}) names.push_back(std::string(arch) + "_" + quant);
  // Mixtures of experts: MLX's CPU gather_mm multiplies float32 only, so
  // their dense case is float32 (model_goldens.py).
  for (const auto& arch : moe_architectures())
    for (const char* quant : {"f32", "q4", "q8"}) names.push_back(arch + "_" + quant);
  for (const auto& arch : hybrid_architectures())
    for (const auto& quant : {unquantized_case(arch), std::string("q4"), std::string("q8")})
      names.push_back(arch + "_" + quant);
  for (const auto& arch : dedicated_architectures())
    for (const auto& quant : {unquantized_case(arch), std::string("q4"), std::string("q8")})
      names.push_back(arch + "_" + quant);
  // A float32 checkpoint with float32 scales, as converted GGUF K-quants are.
  names.push_back("qwen2_q4f32");
  // 6-bit weights, as the converter writes GGUF Q6_K.
  names.push_back("qwen3_q6");
  return names;
}

GoldenCase GoldenCase::load(const std::string& name, const std::string& suite) {
  GoldenCase golden;
  golden.directory = std::filesystem::path(MLX_CPP_GOLDENS) / suite / name;
  golden.model_directory = golden.directory / "model";
  std::ifstream stream(golden.directory / "goldens.json");
  if (!stream)
    throw std::runtime_error("missing goldens for " + name + " in " + golden.directory.string());
  golden.goldens = nlohmann::json::parse(stream);
  golden.logits = mx::load_safetensors((golden.directory / "logits.safetensors").string()).first;
  return golden;
}

std::string compare_exact(const mx::array& actual, const mx::array& expected) {
  std::ostringstream message;
  if (actual.dtype() != expected.dtype()) {
    message << "dtype " << actual.dtype() << " vs expected " << expected.dtype();
    return message.str();
  }
  if (actual.shape() != expected.shape()) {
    message << "shape " << actual.shape() << " vs expected " << expected.shape();
    return message.str();
  }
  if (mx::array_equal(actual, expected, /*equal_nan=*/true).item<bool>()) return "";
  auto difference =
      mx::abs(mx::subtract(mx::astype(actual, mx::float32), mx::astype(expected, mx::float32)));
  auto mismatches = mx::sum(mx::not_equal(actual, expected)).item<int>();
  message << mismatches << " of " << actual.size() << " elements differ, max abs difference "
          << mx::max(difference).item<float>();
  return message.str();
}

}  // namespace mlx_cpp::testing
