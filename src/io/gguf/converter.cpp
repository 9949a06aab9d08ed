#include "io/gguf/converter.h"

#include <mlx/io.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>
#include <unistd.h>

#include <chrono>
#include <map>

#include "io/error.h"
#include "io/gguf/architecture.h"
#include "io/gguf/ggml_types.h"
#include "io/gguf/gguf_file.h"
#include "io/gguf/tensor_conversion.h"
#include "io/gguf/tokenizer_synthesis.h"
#include "io/json_file.h"

namespace mlx_cpp::gguf {
namespace {

namespace fs = std::filesystem;
namespace mx = mlx::core;

struct QuantizedModule {
  int bits;
  int group_size;
};

// mlx-lm's quantization block: the most common (bits, group size) at the top,
// every module that differs keyed by its module path.
nlohmann::json quantization_block(const std::map<std::string, QuantizedModule>& modules) {
  std::map<std::pair<int, int>, int> counts;
  for (const auto& [path, module] : modules) ++counts[{module.bits, module.group_size}];
  auto common = std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
                  return a.second < b.second;
                })->first;
  nlohmann::json block{{"group_size", common.second}, {"bits", common.first}, {"mode", "affine"}};
  for (const auto& [path, module] : modules) {
    if (module.bits == common.first && module.group_size == common.second) continue;
    block[path] = {{"group_size", module.group_size}, {"bits", module.bits}, {"mode", "affine"}};
  }
  return block;
}

std::string quantization_text(const std::map<std::string, QuantizedModule>& modules) {
  if (modules.empty()) return "none";
  std::map<std::pair<int, int>, int> counts;
  for (const auto& [path, module] : modules) ++counts[{module.bits, module.group_size}];
  std::string text = "affine";
  for (const auto& [key, count] : counts) {
    text += " " + std::to_string(key.first) + "-bit/g" + std::to_string(key.second) + " x" +
            std::to_string(count);
  }
  return text;
}

void prepare_output(const fs::path& out_dir) {
  if (fs::exists(out_dir) && !(fs::is_directory(out_dir) && fs::is_empty(out_dir))) {
    throw Error("[convert] output " + out_dir.string() +
                " already exists and is not an empty directory");
  }
}

std::uint64_t directory_bytes(const fs::path& dir) {
  std::uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

void check_supported_tensors(const GgufFile& file, const ArchitectureSpec& spec) {
  if (file.find_tensor("rope_freqs.weight") != nullptr) {
    throw Error("[convert] " + file.path().string() +
                " carries rope_freqs (Llama 3 rope scaling), which the converter does not "
                "support yet");
  }
  std::string unknown;
  for (const auto& tensor : file.tensors()) {
    if (!hugging_face_name(spec, tensor.name))
      unknown += (unknown.empty() ? "" : ", ") + tensor.name;
  }
  if (!unknown.empty()) {
    throw Error("[convert] unknown " + std::string(spec.gguf_name) + " tensors in " +
                file.path().string() + ": " + unknown);
  }
}

}  // namespace

mx::Dtype parse_dense_dtype(const std::string& name) {
  if (name == "bf16" || name == "bfloat16") return mx::bfloat16;
  if (name == "f16" || name == "float16") return mx::float16;
  if (name == "f32" || name == "float32") return mx::float32;
  throw Error("[convert] unknown --dtype '" + name + "' (use bf16, f16 or f32)");
}

ConversionSummary convert_gguf(const fs::path& gguf_path, const fs::path& out_dir,
                               const ConvertOptions& options) {
  auto start = std::chrono::steady_clock::now();
  prepare_output(out_dir);
  GgufFile file(gguf_path);
  const auto& spec = architecture_of(file);
  check_supported_tensors(file, spec);
  auto config = model_config(file, spec);
  auto tokenizer = synthesize_tokenizer(file);

  ConversionSummary summary;
  summary.architecture = spec.gguf_name;
  summary.model_type = spec.model_type;
  summary.name = file.string_or("general.name", "");
  summary.source_types = nlohmann::json::object();
  TensorContext context{file, spec, config["num_attention_heads"].get<int>(),
                        config["num_key_value_heads"].get<int>()};
  QuantizationChoice choice{options.bits, options.group_size, options.dense_dtype};
  std::unordered_map<std::string, mx::array> arrays;
  std::map<std::string, QuantizedModule> quantized;
  for (const auto& tensor : file.tensors()) {
    auto hf_name = *hugging_face_name(spec, tensor.name);
    auto converted = convert_tensor(context, tensor, hf_name, choice);
    std::vector<mx::array> to_evaluate;
    for (auto& [name, array] : converted.arrays) {
      to_evaluate.push_back(array);
      arrays.insert_or_assign(name, array);
    }
    mx::eval(to_evaluate);  // one tensor at a time keeps peak memory low
    if (converted.bits) {
      quantized[hf_name.substr(0, hf_name.size() - 7)] = {*converted.bits, converted.group_size};
      ++(converted.exact ? summary.exact_tensors : summary.requantized_tensors);
    }
    auto type = ggml_type_name(tensor.type);
    summary.source_types[type] = summary.source_types.value(type, 0) + 1;
    summary.parameters += tensor.element_count;
  }
  if (!quantized.empty()) {
    config["quantization"] = quantization_block(quantized);
    config["quantization_config"] = config["quantization"];
  }
  summary.quantization = quantization_text(quantized);

  auto temporary = out_dir.parent_path() /
                   (out_dir.filename().string() + ".partial-" + std::to_string(::getpid()));
  fs::remove_all(temporary);
  fs::create_directories(temporary);
  try {
    mx::save_safetensors((temporary / "model.safetensors").string(), arrays, {{"format", "mlx"}});
    write_json_file(temporary / "config.json", config);
    write_json_file(temporary / "tokenizer.json", tokenizer.tokenizer);
    write_json_file(temporary / "tokenizer_config.json", tokenizer.tokenizer_config);
    write_json_file(temporary / "special_tokens_map.json", tokenizer.special_tokens_map);
    write_json_file(temporary / "generation_config.json", tokenizer.generation_config);
    if (fs::exists(out_dir)) fs::remove(out_dir);  // an empty directory, checked above
    fs::rename(temporary, out_dir);
  } catch (...) {
    fs::remove_all(temporary);
    throw;
  }
  summary.bytes_on_disk = directory_bytes(out_dir);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace mlx_cpp::gguf
