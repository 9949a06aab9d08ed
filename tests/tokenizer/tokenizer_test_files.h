#pragma once
// A tiny byte-level BPE tokenizer.json written into a fresh temporary
// directory, for unit tests that need a real file on disk.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/byte_level.h"

namespace mlx_cpp::testing {

inline constexpr int kBosId = 300;
inline constexpr int kEosId = 301;

// Vocab: the 256 byte characters (ids 0..255) plus "he", "ll", "hell",
// "hello" from four merges; <s> and </s> are special added tokens and a
// TemplateProcessing adds <s> in front.
inline nlohmann::json tiny_tokenizer_json() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int byte = 0; byte < 256; ++byte) {
    vocab[byte_level::encode(std::string(1, static_cast<char>(byte)))] = byte;
  }
  vocab["he"] = 256;
  vocab["ll"] = 257;
  vocab["hell"] = 258;
  vocab["hello"] = 259;
  const auto added = [](int id, const char* content) {
    return nlohmann::json{{"id", id},        {"content", content}, {"single_word", false},
                          {"lstrip", false}, {"rstrip", false},    {"normalized", false},
                          {"special", true}};
  };
  return {
      {"model",
       {{"type", "BPE"},
        {"vocab", vocab},
        {"merges", {"h e", "l l", "he ll", "hell o"}},
        {"byte_fallback", false}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {kBosId}}, {"tokens", {"<s>"}}}}}}}},
      {"added_tokens", {added(kBosId, "<s>"), added(kEosId, "</s>")}},
  };
}

// A fresh directory under the system temp dir, removed by the destructor.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    static int counter = 0;
    path_ =
        std::filesystem::temp_directory_path() /
        ("mlx-cpp-tokenizer-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TemporaryDirectory() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace mlx_cpp::testing
