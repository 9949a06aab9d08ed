#include "tokenizer/normalizer.h"

#include <vector>

#include "io/error.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode_text.h"

namespace mlx_cpp {
namespace {

class NfcNormalizer : public Normalizer {
 public:
  std::string normalize(std::string text) const override { return unicode::nfc(text); }
};

// Replaces every match of a literal or regex pattern.
class ReplaceNormalizer : public Normalizer {
 public:
  explicit ReplaceNormalizer(const nlohmann::json& spec)
      : pattern_(pattern_regex(spec, "Replace normalizer"), "Replace normalizer"),
        content_(string_field(spec, "content", "Replace normalizer")) {}
  std::string normalize(std::string text) const override {
    return replace_all(pattern_, text, content_);
  }

 private:
  Regex pattern_;
  std::string content_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(const nlohmann::json& spec)
      : prefix_(string_field(spec, "prepend", "Prepend normalizer")) {}
  std::string normalize(std::string text) const override {
    return text.empty() ? text : prefix_ + text;
  }

 private:
  std::string prefix_;
};

class StripNormalizer : public Normalizer {
 public:
  explicit StripNormalizer(const nlohmann::json& spec)
      : left_(spec.value("strip_left", false)), right_(spec.value("strip_right", false)) {}
  std::string normalize(std::string text) const override {
    return unicode::strip_whitespace(text, left_, right_);
  }

 private:
  bool left_;
  bool right_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  std::string normalize(std::string text) const override { return unicode::lowercase(text); }
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(const nlohmann::json& spec) {
    for (const auto& child : array_field(spec, "normalizers", "Sequence normalizer")) {
      if (auto normalizer = make_normalizer(child)) children_.push_back(std::move(normalizer));
    }
  }
  std::string normalize(std::string text) const override {
    for (const auto& child : children_) text = child->normalize(std::move(text));
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> children_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = type_field(spec, "normalizer");
  if (type == "NFC") return std::make_unique<NfcNormalizer>();
  if (type == "Replace") return std::make_unique<ReplaceNormalizer>(spec);
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(spec);
  if (type == "Strip") return std::make_unique<StripNormalizer>(spec);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Sequence") return std::make_unique<SequenceNormalizer>(spec);
  throw Error("[tokenizer.json] unsupported normalizer type '" + type +
              "' (supported: NFC, Replace, Prepend, Strip, Lowercase, Sequence)");
}

}  // namespace mlx_cpp
