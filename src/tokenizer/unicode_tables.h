#pragma once
// Unicode data tables (generated into unicode_tables.cpp by
// tools/oracle/tokenizer_unicode_tables.py), sorted by code point.
#include <array>
#include <vector>

namespace mlx_cpp::unicode {

struct CombiningClass {
  char32_t code_point;
  unsigned char combining_class;
};
struct Decomposition {  // full canonical decomposition, zero-padded
  char32_t code_point;
  std::array<char32_t, 4> parts;
};
struct Composition {  // primary composite of first + second
  char32_t first;
  char32_t second;
  char32_t composite;
};
struct LowercaseMapping {
  char32_t code_point;
  const char* lowercase_utf8;
};

extern const std::vector<CombiningClass> kCombiningClasses;
extern const std::vector<Decomposition> kDecompositions;
extern const std::vector<Composition> kCompositions;
extern const std::vector<LowercaseMapping> kLowercaseMappings;

}  // namespace mlx_cpp::unicode
