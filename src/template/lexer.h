#pragma once
// Splits a template into text and tag tokens the way jinja2's lexer does
// with trim_blocks and lstrip_blocks on: `{%-`/`-%}` strip whitespace,
// `{%+` keeps it, a block tag alone on its line takes its indentation, and
// the newline after a block or comment tag is dropped. Newlines are
// normalized to "\n" and one trailing newline is removed, as jinja2 does.
#include <cstdint>
#include <string>
#include <vector>

namespace mlx_cpp::jinja {

enum class TokenKind {
  Text,
  VariableBegin,  // {{
  VariableEnd,    // }}
  BlockBegin,     // {%
  BlockEnd,       // %}
  Name,
  String,
  Integer,
  Float,
  Operator,
  EndOfInput,
};

struct Token {
  TokenKind kind;
  std::string text;  // text, name, operator, or the decoded string literal
  int line = 1;
  int64_t integer = 0;
  double number = 0.0;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws TemplateSyntaxError (see parser.h) on unterminated tags or strings.
std::vector<Token> tokenize_template(const std::string& source, const LexerOptions& options = {});

}  // namespace mlx_cpp::jinja
