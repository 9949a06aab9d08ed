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

}  // namespace

Regex::Regex(const std::string& pattern, const std::string& purpose)
    : compiled_(std::make_unique<Compiled>()) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                  PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error_code,
                                  &error_offset, nullptr);
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
