#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "io/error.h"
#include "tokenizer/utf8.h"

namespace mlx_cpp {

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() {
    if (code != nullptr) pcre2_code_free(code);
  }
};

namespace {

// Match data is per call (the compiled code is shared and read-only), so one
// Regex can be used from several threads at once.
struct MatchData {
  explicit MatchData(const pcre2_code* code)
      : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data); }
  pcre2_match_data* data;
};

// Unicode White_Space, which is what \s means in the Oniguruma / Rust
// regexes tokenizers uses. PCRE2's UCP \s also takes U+180E (through \h),
// so patterns get this explicit class instead.
constexpr const char* kWhiteSpace =
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
    "\\x{202F}\\x{205F}\\x{3000}";

// Rewrites \s (in and outside character classes) and \S (outside them);
// \Q...\E literals are copied as they are.
std::string with_unicode_white_space(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size());
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 'Q') {  // a quoted literal runs verbatim up to \E
        const size_t end = pattern.find("\\E", i + 1);
        const size_t stop = end == std::string::npos ? pattern.size() : end + 2;
        out.append(pattern, i - 1, stop - (i - 1));
        i = stop - 1;
      } else if (next == 's') {
        out += in_class ? std::string(kWhiteSpace) : std::string("[") + kWhiteSpace + "]";
      } else if (next == 'S' && !in_class) {
        out += std::string("[^") + kWhiteSpace + "]";
      } else {
        out += c;
        out += next;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

Regex::Regex(const std::string& pattern, const std::string& purpose)
    : compiled_(std::make_unique<Compiled>()) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  const std::string translated = with_unicode_white_space(pattern);
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()),
                                  translated.size(), PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK,
                                  &error_code, &error_offset, nullptr);
  if (compiled_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    throw Error("[" + purpose + "] cannot compile regex '" + pattern + "' at offset " +
                std::to_string(error_offset) + ": " + reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter
}

Regex::~Regex() = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  MatchData match(compiled_->code);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(compiled_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK,
                               match.data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw Error("[regex] match failed with PCRE2 code " + std::to_string(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.data);
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    if (end > begin) {
      matches.emplace_back(begin, end);
      start = end;
    } else {  // an empty match: step over one character
      if (begin >= text.size()) break;
      start = begin + utf8::char_length(text, begin);
    }
  }
  return matches;
}

bool Regex::search(std::string_view text) const {
  MatchData match(compiled_->code);
  const int rc = pcre2_match(compiled_->code, reinterpret_cast<PCRE2_SPTR>(text.data()),
                             text.size(), 0, PCRE2_NO_UTF_CHECK, match.data, nullptr);
  return rc >= 0;
}

std::string Regex::escape(std::string_view text) {
  std::string out = "\\Q";
  for (size_t pos = 0; pos < text.size(); ++pos) {
    if (text.substr(pos, 2) == "\\E") {
      out += "\\E\\\\E\\Q";
      ++pos;
    } else {
      out += text[pos];
    }
  }
  return out + "\\E";
}

}  // namespace mlx_cpp
