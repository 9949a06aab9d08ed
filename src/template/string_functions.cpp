#include "template/string_functions.h"

#include <algorithm>
#include <cstdint>

#include "template/python_text.h"
#include "template/render_budget.h"

namespace mlx_cpp::jinja {
namespace {

char32_t upper_code_point(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xe0 && c <= 0xfe && c != 0xf7)) return c - 32;
  if (c == 0xff) return 0x178;
  if (c >= 0x100 && c <= 0x17f && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149) {
    bool odd_lower = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
    if (odd_lower ? (c % 2 == 0) : (c % 2 == 1)) return c - 1;
    return c;
  }
  if (c >= 0x3b1 && c <= 0x3c9 && c != 0x3c2) return c - 32;
  if (c == 0x3c2) return 0x3a3;
  if (c >= 0x430 && c <= 0x44f) return c - 32;
  if (c >= 0x450 && c <= 0x45f) return c - 80;
  return c;
}

char32_t lower_code_point(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if ((c >= 0xc0 && c <= 0xde && c != 0xd7)) return c + 32;
  if (c == 0x178) return 0xff;
  if (c >= 0x100 && c <= 0x17f && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149) {
    bool odd_lower = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
    if (odd_lower ? (c % 2 == 1) : (c % 2 == 0)) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) return c + 32;
  if (c >= 0x410 && c <= 0x42f) return c + 32;
  if (c >= 0x400 && c <= 0x40f) return c + 80;
  return c;
}

bool is_cased_letter(char32_t c) {
  return upper_code_point(c) != c || lower_code_point(c) != c;
}

// Python's \w for the scripts we know: letters, digits, underscore, and any
// code point above ASCII that is not a space or punctuation we recognize.
bool is_word_character(char32_t c) {
  if (c < 0x80)
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  if (is_python_space(c)) return false;
  if ((c >= 0x2000 && c <= 0x206f) || (c >= 0x3000 && c <= 0x303f) || (c >= 0xa1 && c <= 0xbf) ||
      c == 0xd7 || c == 0xf7) {
    return false;
  }
  return true;
}

std::u32string map_code_points(const std::string& text, char32_t (*mapping)(char32_t)) {
  std::u32string code_points = utf8_decode(text);
  for (auto& c : code_points) c = mapping(c);
  return code_points;
}

bool is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0x1c || c == 0x1d || c == 0x1e ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

}  // namespace

bool is_python_space(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f) || c == 0x85 ||
         c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
         c == 0x202f || c == 0x205f || c == 0x3000;
}

std::string to_upper(const std::string& text) {
  return utf8_encode(map_code_points(text, upper_code_point));
}

std::string to_lower(const std::string& text) {
  return utf8_encode(map_code_points(text, lower_code_point));
}

std::string python_capitalize(const std::string& text) {
  std::u32string code_points = map_code_points(text, lower_code_point);
  if (!code_points.empty()) code_points[0] = upper_code_point(code_points[0]);
  return utf8_encode(code_points);
}

std::string python_title(const std::string& text) {
  std::u32string code_points = utf8_decode(text);
  bool previous_cased = false;
  for (auto& c : code_points) {
    bool cased = is_cased_letter(c);
    c = previous_cased ? lower_code_point(c) : upper_code_point(c);
    previous_cased = cased;
  }
  return utf8_encode(code_points);
}

std::string jinja_title(const std::string& text) {
  // Words start after runs of "-", whitespace, "(", "{", "[" or "<".
  std::u32string code_points = utf8_decode(text);
  bool at_word_start = true;
  for (auto& c : code_points) {
    bool separator = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_python_space(c);
    if (separator) {
      at_word_start = true;
      continue;
    }
    c = at_word_start ? upper_code_point(c) : lower_code_point(c);
    at_word_start = false;
  }
  return utf8_encode(code_points);
}

std::string python_strip(const std::string& text, const std::optional<std::string>& chars,
                         StripSide side) {
  std::u32string code_points = utf8_decode(text);
  std::u32string strip_set = chars ? utf8_decode(*chars) : std::u32string();
  auto strips = [&](char32_t c) {
    return chars ? strip_set.find(c) != std::u32string::npos : is_python_space(c);
  };
  size_t begin = 0;
  size_t end = code_points.size();
  if (side != StripSide::Right) {
    while (begin < end && strips(code_points[begin])) ++begin;
  }
  if (side != StripSide::Left) {
    while (end > begin && strips(code_points[end - 1])) --end;
  }
  return utf8_encode(code_points.substr(begin, end - begin));
}

std::vector<std::string> python_split(const std::string& text,
                                      const std::optional<std::string>& separator,
                                      int64_t max_split) {
  std::vector<std::string> parts;
  if (separator) {
    if (separator->empty()) throw TemplateFailure("empty separator");
    size_t start = 0;
    while (max_split < 0 || static_cast<int64_t>(parts.size()) < max_split) {
      size_t found = text.find(*separator, start);
      if (found == std::string::npos) break;
      parts.push_back(text.substr(start, found - start));
      start = found + separator->size();
    }
    parts.push_back(text.substr(start));
    return parts;
  }
  std::u32string code_points = utf8_decode(text);
  size_t i = 0;
  while (i < code_points.size()) {
    while (i < code_points.size() && is_python_space(code_points[i])) ++i;
    if (i >= code_points.size()) break;
    if (max_split >= 0 && static_cast<int64_t>(parts.size()) >= max_split) {
      size_t end = code_points.size();
      while (end > i && is_python_space(code_points[end - 1])) --end;
      parts.push_back(utf8_encode(code_points.substr(i, end - i)));
      break;
    }
    size_t start = i;
    while (i < code_points.size() && !is_python_space(code_points[i])) ++i;
    parts.push_back(utf8_encode(code_points.substr(start, i - start)));
  }
  return parts;
}

std::vector<std::string> python_rsplit(const std::string& text,
                                       const std::optional<std::string>& separator,
                                       int64_t max_split) {
  if (max_split < 0 || !separator) return python_split(text, separator, max_split);
  if (separator->empty()) throw TemplateFailure("empty separator");
  std::vector<std::string> parts;
  size_t end = text.size();
  while (static_cast<int64_t>(parts.size()) < max_split) {
    if (end < separator->size()) break;
    size_t found = text.rfind(*separator, end - separator->size());
    if (found == std::string::npos) break;
    parts.insert(parts.begin(),
                 text.substr(found + separator->size(), end - found - separator->size()));
    end = found;
  }
  parts.insert(parts.begin(), text.substr(0, end));
  return parts;
}

std::vector<std::string> python_splitlines(const std::string& text, bool keep_ends) {
  std::u32string code_points = utf8_decode(text);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < code_points.size(); ++i) {
    if (!is_line_break(code_points[i])) continue;
    size_t line_end = i;
    if (code_points[i] == '\r' && i + 1 < code_points.size() && code_points[i + 1] == '\n') ++i;
    lines.push_back(utf8_encode(code_points.substr(start, (keep_ends ? i + 1 : line_end) - start)));
    start = i + 1;
  }
  if (start < code_points.size()) lines.push_back(utf8_encode(code_points.substr(start)));
  return lines;
}

std::string python_replace(const std::string& text, const std::string& old_text,
                           const std::string& new_text, int64_t count) {
  // The result's size first, so a render cannot be made to build more
  // than it can afford ('x' * 10**7 | replace('', 'y' * 10**3)).
  auto limit = static_cast<uint64_t>(count < 0 ? INT64_MAX : count);
  uint64_t occurrences =
      std::min<uint64_t>(limit, static_cast<uint64_t>(python_count(text, old_text)));
  size_t grown = bytes_times(occurrences, new_text.size());
  ensure_room_for(grown > text.size() ? grown : text.size());
  std::string out;
  int64_t replaced = 0;
  if (old_text.empty()) {
    std::u32string code_points = utf8_decode(text);
    for (char32_t c : code_points) {
      if (count < 0 || replaced < count) {
        out += new_text;
        ++replaced;
      }
      utf8_append(out, c);
    }
    if (count < 0 || replaced < count) out += new_text;
    return out;
  }
  size_t start = 0;
  while (count < 0 || replaced < count) {
    size_t found = text.find(old_text, start);
    if (found == std::string::npos) break;
    out += text.substr(start, found - start) + new_text;
    start = found + old_text.size();
    ++replaced;
  }
  return out + text.substr(start);
}

std::string python_center(const std::string& text, int64_t width, const std::string& fill) {
  auto length = static_cast<int64_t>(utf8_length(text));
  if (width <= length) return text;
  int64_t margin = width - length;
  // CPython puts the extra space on the left when margin and width are odd.
  int64_t left = margin / 2 + (margin & width & 1);
  ensure_room_for(text.size() + bytes_times(static_cast<size_t>(margin), fill.size()));
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += text;
  for (int64_t i = 0; i < margin - left; ++i) out += fill;
  return out;
}

int64_t python_count(const std::string& text, const std::string& part) {
  if (part.empty()) return static_cast<int64_t>(utf8_length(text)) + 1;
  int64_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + part.size())) {
    ++count;
  }
  return count;
}

int64_t python_find(const std::string& text, const std::string& part, bool from_right) {
  size_t at = from_right ? text.rfind(part) : text.find(part);
  if (at == std::string::npos) return -1;
  return static_cast<int64_t>(utf8_length(text.substr(0, at)));
}

int64_t count_words(const std::string& text) {
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : utf8_decode(text)) {
    bool word = is_word_character(c);
    if (word && !in_word) ++words;
    in_word = word;
  }
  return words;
}

}  // namespace mlx_cpp::jinja
