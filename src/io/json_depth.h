#pragma once
// One nesting limit for JSON wherever it enters: request bodies, JSON text
// inside them (tool arguments, schemas), model files. Deeper documents are
// refused before they are parsed: copying, converting (to template values,
// tokenizer parts) and printing JSON recurse once per level, so a 30 KB
// body nested 15,000 deep would overflow the stack. Header-only: every
// layer that reads JSON uses it.
#include <string>
#include <string_view>

#include "io/error.h"

namespace mlx_cpp {

inline constexpr int kMaxJsonDepth = 128;

// The deepest nesting of arrays and objects in `text` (brackets inside
// strings do not count). Reads any text; it need not be valid JSON.
inline int json_nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// Throws Error("WHAT nests deeper than 128 levels of arrays and objects").
inline void check_json_depth(std::string_view text, const std::string& what) {
  if (json_nesting_depth(text) > kMaxJsonDepth)
    throw Error(what + " nests deeper than " + std::to_string(kMaxJsonDepth) +
                " levels of arrays and objects");
}

}  // namespace mlx_cpp
