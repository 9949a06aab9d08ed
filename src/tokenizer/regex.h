#pragma once
// A compiled PCRE2 pattern in UTF + UCP mode (so \p{L}, \s and \w follow
// Unicode, like the Oniguruma / Rust regexes `tokenizers` uses), JIT-compiled
// when the platform allows.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mlx_cpp {

class Regex {
 public:
  // Throws Error naming `purpose` and the pattern when it does not compile.
  Regex(const std::string& pattern, const std::string& purpose);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // All non-overlapping matches as [begin, end) byte ranges, left to right.
  // Empty matches are skipped.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
  // Whether the pattern matches somewhere in text.
  bool search(std::string_view text) const;

  // Escapes text so that it matches literally.
  static std::string escape(std::string_view text);

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace mlx_cpp
