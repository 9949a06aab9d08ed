#include "tokenizer/decoder.h"

#include "io/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace mlx_cpp {
namespace {

// Maps every token's characters back to bytes and returns the whole text as
// one token, with invalid UTF-8 repaired like Rust's from_utf8_lossy.
class ByteLevelDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const auto& token : tokens) {
      const auto decoded = byte_level::decode(token);
      bytes += decoded ? *decoded : token;
    }
    return {utf8::repair_lossy(bytes)};
  }
};

// Turns the replacement character back into spaces; in the first token it is
// dropped instead (it was prepended) unless the prepend scheme is "never".
class MetaspaceDecoder : public Decoder {
 public:
  explicit MetaspaceDecoder(const nlohmann::json& spec)
      : replacement_(char_field(spec, "replacement", "Metaspace decoder")),
        drop_in_first_(spec.value("prepend_scheme", std::string("always")) != "never" &&
                       bool_field(spec, "add_prefix_space", true, "Metaspace decoder")) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      for (const auto character : utf8::split_chars(tokens[i])) {
        if (character != replacement_) {
          out += character;
        } else if (!(i == 0 && drop_in_first_)) {
          out += ' ';
        }
      }
      tokens[i] = std::move(out);
    }
    return tokens;
  }

 private:
  std::string replacement_;
  bool drop_in_first_;
};

class ReplaceDecoder : public Decoder {
 public:
  explicit ReplaceDecoder(const nlohmann::json& spec)
      : pattern_(pattern_regex(spec, "Replace decoder"), "Replace decoder"),
        content_(string_field(spec, "content", "Replace decoder")) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (auto& token : tokens) token = replace_all(pattern_, token, content_);
    return tokens;
  }

 private:
  Regex pattern_;
  std::string content_;
};

// Gathers runs of <0xNN> tokens into text: valid UTF-8 becomes one token,
// otherwise every byte becomes one U+FFFD.
class ByteFallbackDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    size_t pending_count = 0;
    const auto flush = [&] {
      if (pending_count == 0) return;
      if (utf8::is_valid(pending)) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending_count; ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      pending.clear();
      pending_count = 0;
    };
    for (auto& token : tokens) {
      if (const int byte = parse_byte_token(token); byte >= 0) {
        pending += static_cast<char>(byte);
        ++pending_count;
      } else {
        flush();
        out.push_back(std::move(token));
      }
    }
    flush();
    return out;
  }

 private:
  static int parse_byte_token(const std::string& token) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
    int value = 0;
    for (size_t i = 3; i < 5; ++i) {
      const char c = token[i];
      const int digit = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                               : -1;
      if (digit < 0) return -1;
      value = value * 16 + digit;
    }
    return value;
  }
};

class FuseDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string joined;
    for (const auto& token : tokens) joined += token;
    return {joined};
  }
};

// Removes up to `start` leading and `stop` trailing copies of one character
// from every token.
class StripDecoder : public Decoder {
 public:
  explicit StripDecoder(const nlohmann::json& spec)
      : content_(char_field(spec, "content", "Strip decoder")),
        start_(spec.value("start", size_t{0})),
        stop_(spec.value("stop", size_t{0})) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (auto& token : tokens) {
      const auto chars = utf8::split_chars(token);
      size_t begin = 0;
      while (begin < start_ && begin < chars.size() && chars[begin] == content_) ++begin;
      size_t end = chars.size();
      while (chars.size() - end < stop_ && end > begin && chars[end - 1] == content_) --end;
      std::string out;
      for (size_t i = begin; i < end; ++i) out += chars[i];
      token = std::move(out);
    }
    return tokens;
  }

 private:
  std::string content_;
  size_t start_;
  size_t stop_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(const nlohmann::json& spec) {
    for (const auto& child : array_field(spec, "decoders", "Sequence decoder")) {
      if (auto decoder = make_decoder(child)) children_.push_back(std::move(decoder));
    }
  }
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (const auto& child : children_) tokens = child->decode_chain(std::move(tokens));
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> children_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = type_field(spec, "decoder");
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") return std::make_unique<MetaspaceDecoder>(spec);
  if (type == "Replace") return std::make_unique<ReplaceDecoder>(spec);
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") return std::make_unique<StripDecoder>(spec);
  if (type == "Sequence") return std::make_unique<SequenceDecoder>(spec);
  throw Error("[tokenizer.json] unsupported decoder type '" + type +
              "' (supported: ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence)");
}

}  // namespace mlx_cpp
