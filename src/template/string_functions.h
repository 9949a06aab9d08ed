#pragma once
// Python's str methods over UTF-8 text, by code point. Case mapping covers
// ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic; other scripts pass
// through unchanged.
#include <optional>
#include <string>
#include <vector>

namespace mlx_cpp::jinja {

bool is_python_space(char32_t c);
std::string to_upper(const std::string& text);
std::string to_lower(const std::string& text);
std::string python_capitalize(const std::string& text);
std::string python_title(const std::string& text);  // str.title()
std::string jinja_title(const std::string& text);   // the |title filter

enum class StripSide { Both, Left, Right };
// chars: nullopt strips whitespace, otherwise any of the given code points.
std::string python_strip(const std::string& text, const std::optional<std::string>& chars,
                         StripSide side);
// sep: nullopt splits on whitespace runs; max_split < 0 means no limit.
std::vector<std::string> python_split(const std::string& text,
                                      const std::optional<std::string>& separator,
                                      int64_t max_split);
std::vector<std::string> python_rsplit(const std::string& text,
                                       const std::optional<std::string>& separator,
                                       int64_t max_split);
std::vector<std::string> python_splitlines(const std::string& text, bool keep_ends);
std::string python_replace(const std::string& text, const std::string& old_text,
                           const std::string& new_text, int64_t count);
std::string python_center(const std::string& text, int64_t width, const std::string& fill);
int64_t python_count(const std::string& text, const std::string& part);
// Index in code points, or -1.
int64_t python_find(const std::string& text, const std::string& part, bool from_right);
// Words as jinja2's wordcount sees them (\w+ runs).
int64_t count_words(const std::string& text);

}  // namespace mlx_cpp::jinja
