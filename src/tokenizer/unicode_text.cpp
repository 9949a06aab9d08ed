#include "tokenizer/unicode_text.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "tokenizer/unicode_tables.h"
#include "tokenizer/utf8.h"

namespace mlx_cpp::unicode {
namespace {

// Hangul syllables compose and decompose algorithmically (Unicode 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr char32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

template <typename Entry>
const Entry* find_entry(const std::vector<Entry>& table, char32_t code_point) {
  const auto it =
      std::lower_bound(table.begin(), table.end(), code_point,
                       [](const Entry& entry, char32_t value) { return entry.code_point < value; });
  return it != table.end() && it->code_point == code_point ? &*it : nullptr;
}

unsigned char combining_class(char32_t code_point) {
  const auto* entry = find_entry(kCombiningClasses, code_point);
  return entry == nullptr ? 0 : entry->combining_class;
}

void decompose(char32_t code_point, std::vector<char32_t>& out) {
  if (code_point >= kSBase && code_point < kSBase + kSCount) {
    const char32_t index = code_point - kSBase;
    out.push_back(kLBase + index / kNCount);
    out.push_back(kVBase + (index % kNCount) / kTCount);
    if (index % kTCount != 0) out.push_back(kTBase + index % kTCount);
    return;
  }
  const auto* entry = find_entry(kDecompositions, code_point);
  if (entry == nullptr) {
    out.push_back(code_point);
    return;
  }
  for (char32_t part : entry->parts) {
    if (part != 0) out.push_back(part);
  }
}

// Sorts each run of non-starters by combining class, stably.
void canonical_order(std::vector<char32_t>& chars) {
  size_t run_start = 0;
  while (run_start < chars.size()) {
    if (combining_class(chars[run_start]) == 0) {
      ++run_start;
      continue;
    }
    size_t run_end = run_start;
    while (run_end < chars.size() && combining_class(chars[run_end]) != 0) ++run_end;
    std::stable_sort(
        chars.begin() + run_start, chars.begin() + run_end,
        [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    run_start = run_end;
  }
}

char32_t compose_pair(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase &&
      second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 &&
      second > kTBase && second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  static const auto* pairs = [] {
    auto* map = new std::unordered_map<uint64_t, char32_t>();
    for (const auto& entry : kCompositions) {
      (*map)[(static_cast<uint64_t>(entry.first) << 32) | entry.second] = entry.composite;
    }
    return map;
  }();
  const auto it = pairs->find((static_cast<uint64_t>(first) << 32) | second);
  return it == pairs->end() ? 0 : it->second;
}

// The canonical composition algorithm over a decomposed, ordered sequence:
// a character joins the last starter when nothing between them blocks it.
void compose(std::vector<char32_t>& chars) {
  size_t write = 0;
  size_t starter = 0;
  bool have_starter = false;
  for (size_t read = 0; read < chars.size(); ++read) {
    const char32_t current = chars[read];
    const int current_class = combining_class(current);
    if (have_starter) {
      const bool adjacent = write == starter + 1;
      const int last_class = combining_class(chars[write - 1]);
      if (adjacent || (last_class != 0 && last_class < current_class)) {
        if (const char32_t composite = compose_pair(chars[starter], current)) {
          chars[starter] = composite;
          continue;
        }
      }
    }
    if (current_class == 0) {
      starter = write;
      have_starter = true;
    }
    chars[write++] = current;
  }
  chars.resize(write);
}

}  // namespace

std::string nfc(std::string_view text) {
  const bool below_combining_marks = std::all_of(
      text.begin(), text.end(), [](char byte) { return static_cast<unsigned char>(byte) < 0xCC; });
  if (below_combining_marks) return std::string(text);
  std::vector<char32_t> chars;
  chars.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 0;
    decompose(utf8::decode(text, pos, length), chars);
    pos += length;
  }
  canonical_order(chars);
  compose(chars);
  std::string out;
  out.reserve(text.size());
  for (char32_t code_point : chars) utf8::append(out, code_point);
  return out;
}

std::string lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 0;
    const char32_t code_point = utf8::decode(text, pos, length);
    if (code_point < 0x80) {
      out +=
          static_cast<char>(code_point >= 'A' && code_point <= 'Z' ? code_point + 32 : code_point);
    } else if (const auto* entry = find_entry(kLowercaseMappings, code_point)) {
      out += entry->lowercase_utf8;
    } else {
      out.append(text.substr(pos, length));
    }
    pos += length;
  }
  return out;
}

bool is_white_space(char32_t code_point) {
  switch (code_point) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return code_point >= 0x2000 && code_point <= 0x200A;
  }
}

size_t leading_white_space(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t length = 0;
    if (!is_white_space(utf8::decode(text, pos, length))) break;
    pos += length;
  }
  return pos;
}

size_t trailing_white_space(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t begin = end - 1;
    while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
    size_t length = 0;
    if (!is_white_space(utf8::decode(text, begin, length)) || begin + length != end) break;
    end = begin;
  }
  return text.size() - end;
}

std::string strip_whitespace(std::string_view text, bool left, bool right) {
  const size_t begin = left ? leading_white_space(text) : 0;
  const size_t end = right ? text.size() - trailing_white_space(text.substr(begin)) : text.size();
  return std::string(text.substr(begin, end - begin));
}

}  // namespace mlx_cpp::unicode
