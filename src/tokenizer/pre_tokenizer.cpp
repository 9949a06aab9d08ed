#include "tokenizer/pre_tokenizer.h"

#include "io/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/regex.h"

namespace mlx_cpp {
namespace {

// The GPT-2 pre-split pattern ByteLevel uses when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Splits every piece at the matches of one regex.
class RegexSplitter : public PreTokenizer {
 public:
  RegexSplitter(const std::string& pattern, SplitBehavior behavior, bool invert,
                const std::string& purpose)
      : regex_(pattern, purpose), behavior_(behavior), invert_(invert) {}
  std::vector<Piece> split(std::vector<Piece> pieces) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    for (const auto& piece : pieces) {
      split_piece(piece, regex_.find_all(piece.text), behavior_, invert_, out);
    }
    return out;
  }

 private:
  Regex regex_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  explicit ByteLevelPreTokenizer(const nlohmann::json& spec)
      : add_prefix_space_(bool_field(spec, "add_prefix_space", true, "ByteLevel pre-tokenizer")) {
    if (bool_field(spec, "use_regex", true, "ByteLevel pre-tokenizer")) {
      splitter_ = std::make_unique<RegexSplitter>(kGpt2Pattern, SplitBehavior::isolated, false,
                                                  "ByteLevel pre-tokenizer");
    }
  }
  std::vector<Piece> split(std::vector<Piece> pieces) const override {
    if (add_prefix_space_) {
      for (auto& piece : pieces) {
        if (!piece.text.empty() && piece.text[0] != ' ') piece.text = " " + piece.text;
      }
    }
    if (splitter_) pieces = splitter_->split(std::move(pieces));
    for (auto& piece : pieces) piece.text = byte_level::encode(piece.text);
    return pieces;
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<RegexSplitter> splitter_;
};

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  enum class Prepend { always, first, never };
  explicit MetaspacePreTokenizer(const nlohmann::json& spec);
  std::vector<Piece> split(std::vector<Piece> pieces) const override {
    std::vector<Piece> out;
    for (auto& piece : pieces) {
      const std::string text = replace_all(space_, piece.text, replacement_);
      const bool prepend =
          text.rfind(replacement_, 0) != 0 &&
          (prepend_ == Prepend::always || (prepend_ == Prepend::first && piece.at_input_start));
      Piece replaced{prepend && !text.empty() ? replacement_ + text : text, piece.at_input_start};
      if (split_) {
        split_piece(replaced, replacement_regex_.find_all(replaced.text),
                    SplitBehavior::merged_with_next, false, out);
      } else if (!replaced.text.empty()) {
        out.push_back(std::move(replaced));
      }
    }
    return out;
  }

 private:
  std::string replacement_;
  Prepend prepend_ = Prepend::always;
  bool split_;
  Regex space_{" ", "Metaspace pre-tokenizer"};
  Regex replacement_regex_;
};

MetaspacePreTokenizer::MetaspacePreTokenizer(const nlohmann::json& spec)
    : replacement_(char_field(spec, "replacement", "Metaspace pre-tokenizer")),
      split_(bool_field(spec, "split", true, "Metaspace pre-tokenizer")),
      replacement_regex_(Regex::escape(replacement_), "Metaspace pre-tokenizer") {
  const std::string scheme = spec.value("prepend_scheme", std::string("always"));
  if (scheme == "first") {
    prepend_ = Prepend::first;
  } else if (scheme == "never") {
    prepend_ = Prepend::never;
  } else if (scheme != "always") {
    throw Error("[tokenizer.json] Metaspace prepend_scheme '" + scheme +
                "' is not one of always, first, never");
  }
  if (!bool_field(spec, "add_prefix_space", true, "Metaspace pre-tokenizer")) {
    prepend_ = Prepend::never;  // the older spelling of prepend_scheme "never"
  }
}

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(const nlohmann::json& spec) {
    for (const auto& child : array_field(spec, "pretokenizers", "Sequence pre-tokenizer")) {
      if (auto pre_tokenizer = make_pre_tokenizer(child)) {
        children_.push_back(std::move(pre_tokenizer));
      }
    }
  }
  std::vector<Piece> split(std::vector<Piece> pieces) const override {
    for (const auto& child : children_) pieces = child->split(std::move(pieces));
    return pieces;
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> children_;
};

std::unique_ptr<PreTokenizer> make_split(const nlohmann::json& spec) {
  return std::make_unique<RegexSplitter>(
      pattern_regex(spec, "Split pre-tokenizer"),
      parse_split_behavior(string_field(spec, "behavior", "Split pre-tokenizer")),
      bool_field(spec, "invert", false, "Split pre-tokenizer"), "Split pre-tokenizer");
}

std::unique_ptr<PreTokenizer> make_digits(const nlohmann::json& spec) {
  // Contiguous runs of numeric characters are the same pieces as isolated
  // matches of \p{N}+.
  const bool individual = bool_field(spec, "individual_digits", false, "Digits pre-tokenizer");
  return std::make_unique<RegexSplitter>(individual ? "\\p{N}" : "\\p{N}+", SplitBehavior::isolated,
                                         false, "Digits pre-tokenizer");
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = type_field(spec, "pre-tokenizer");
  if (type == "ByteLevel") return std::make_unique<ByteLevelPreTokenizer>(spec);
  if (type == "Split") return make_split(spec);
  if (type == "Digits") return make_digits(spec);
  if (type == "Metaspace") return std::make_unique<MetaspacePreTokenizer>(spec);
  if (type == "Sequence") return std::make_unique<SequencePreTokenizer>(spec);
  if (type == "Whitespace") {
    return std::make_unique<RegexSplitter>("\\w+|[^\\w\\s]+", SplitBehavior::removed, true,
                                           "Whitespace pre-tokenizer");
  }
  if (type == "WhitespaceSplit") {
    return std::make_unique<RegexSplitter>("\\s+", SplitBehavior::removed, false,
                                           "WhitespaceSplit pre-tokenizer");
  }
  throw Error("[tokenizer.json] unsupported pre-tokenizer type '" + type +
              "' (supported: ByteLevel, Split, Digits, Metaspace, Whitespace, WhitespaceSplit, "
              "Sequence)");
}

}  // namespace mlx_cpp
