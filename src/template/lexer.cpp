#include "template/lexer.h"

#include <cctype>
#include <cstdlib>

#include "template/python_text.h"
#include "template/template_error.h"

namespace mlx_cpp::jinja {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}
bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}
bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// jinja2 reads "\r\n" and "\r" as "\n" and drops one trailing newline.
std::string normalize_newlines(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Python's "unicode-escape" decoding of a string literal's body.
std::string decode_string_escapes(const std::string& body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out += body[i];
      continue;
    }
    char next = body[++i];
    switch (next) {
      case 'n':
        out += '\n';
        continue;
      case 't':
        out += '\t';
        continue;
      case 'r':
        out += '\r';
        continue;
      case 'b':
        out += '\b';
        continue;
      case 'f':
        out += '\f';
        continue;
      case 'v':
        out += '\v';
        continue;
      case 'a':
        out += '\a';
        continue;
      case '0':
        out += '\0';
        continue;
      case '\\':
        out += '\\';
        continue;
      case '\'':
        out += '\'';
        continue;
      case '"':
        out += '"';
        continue;
      case '\n':
        continue;
      default:
        break;
    }
    size_t digits = next == 'x' ? 2 : next == 'u' ? 4 : next == 'U' ? 8 : 0;
    if (digits == 0) {  // unknown escapes stay as written
      out += '\\';
      out += next;
      continue;
    }
    if (i + digits >= body.size()) {
      throw_template_error(line, "truncated \\" + std::string(1, next) + " escape in string");
    }
    std::string hex = body.substr(i + 1, digits);
    char* end = nullptr;
    unsigned long code = std::strtoul(hex.c_str(), &end, 16);
    if (hex.size() != digits || *end != '\0') {
      throw_template_error(line, "invalid \\" + std::string(1, next) + " escape in string");
    }
    utf8_append(out, static_cast<char32_t>(code));
    i += digits;
  }
  return out;
}

class Lexer {
 public:
  Lexer(const std::string& source, const LexerOptions& options)
      : source_(normalize_newlines(source)), options_(options) {}

  std::vector<Token> run() {
    while (position_ < source_.size()) {
      size_t start = find_tag_start(position_);
      text_line_ = line_;
      std::string text = source_.substr(position_, start - position_);
      advance_to(start);
      if (start == source_.size()) {
        emit_text(text);
        break;
      }
      char kind = source_[start + 1];
      char modifier = start + 2 < source_.size() ? source_[start + 2] : '\0';
      apply_leading_whitespace_control(text, kind, modifier);
      emit_text(text);
      advance_to(start + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0));
      if (kind == '#') {
        skip_comment();
      } else if (kind == '%' && try_raw_block()) {
        continue;
      } else {
        lex_tag(kind == '{' ? TokenKind::VariableBegin : TokenKind::BlockBegin);
      }
    }
    tokens_.push_back({TokenKind::EndOfInput, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t find_tag_start(size_t from) const {
    for (size_t i = from; i + 1 < source_.size(); ++i) {
      if (source_[i] == '{' &&
          (source_[i + 1] == '{' || source_[i + 1] == '%' || source_[i + 1] == '#')) {
        return i;
      }
    }
    return source_.size();
  }

  void apply_leading_whitespace_control(std::string& text, char kind, char modifier) {
    apply_leading_whitespace_control_at(text, kind, modifier, position_);
  }

  // `text` ends where the tag starts, at `tag_start` in the source.
  void apply_leading_whitespace_control_at(std::string& text, char kind, char modifier,
                                           size_t tag_start) {
    if (modifier == '-') {
      while (!text.empty() && is_space(text.back())) text.pop_back();
      return;
    }
    if (!options_.lstrip_blocks || kind == '{' || modifier == '+') return;
    // Only when the tag is the first non-blank thing on its line.
    size_t cut = text.size();
    while (cut > 0 && is_blank(text[cut - 1])) --cut;
    size_t text_start = tag_start - text.size();
    bool at_line_start =
        cut == 0 ? (text_start == 0 || source_[text_start - 1] == '\n') : text[cut - 1] == '\n';
    if (at_line_start) text.resize(cut);
  }

  // Text tokens carry the line where their (unstripped) text began.
  void emit_text(const std::string& text) {
    if (!text.empty()) tokens_.push_back({TokenKind::Text, text, text_line_});
  }

  void advance_to(size_t position) {
    for (size_t i = position_; i < position && i < source_.size(); ++i) {
      line_ += source_[i] == '\n';
    }
    position_ = position;
  }

  // After a tag end: "-" strips all whitespace, trim_blocks one newline.
  void apply_trailing_whitespace_control(char modifier, bool is_block_or_comment) {
    if (modifier == '-') {
      size_t end = position_;
      while (end < source_.size() && is_space(source_[end])) ++end;
      advance_to(end);
    } else if (modifier != '+' && is_block_or_comment && options_.trim_blocks &&
               position_ < source_.size() && source_[position_] == '\n') {
      advance_to(position_ + 1);
    }
  }

  void skip_comment() {
    int start_line = line_;
    size_t end = source_.find("#}", position_);
    if (end == std::string::npos) throw_template_error(start_line, "unterminated comment");
    char modifier = end > position_ && (source_[end - 1] == '-' || source_[end - 1] == '+')
                        ? source_[end - 1]
                        : '\0';
    advance_to(end + 2);
    apply_trailing_whitespace_control(modifier, true);
  }

  // {% raw %}...{% endraw %}: the body is text, never parsed.
  bool try_raw_block() {
    size_t cursor = position_;
    while (cursor < source_.size() && is_space(source_[cursor])) ++cursor;
    if (source_.compare(cursor, 3, "raw") != 0) return false;
    cursor += 3;
    while (cursor < source_.size() && is_space(source_[cursor])) ++cursor;
    char modifier = '\0';
    if (cursor < source_.size() && (source_[cursor] == '-' || source_[cursor] == '+')) {
      modifier = source_[cursor++];
    }
    if (source_.compare(cursor, 2, "%}") != 0) return false;
    advance_to(cursor + 2);
    apply_trailing_whitespace_control(modifier, true);
    size_t body_start = position_;
    size_t end_tag = find_endraw(body_start);
    std::string body = source_.substr(body_start, end_tag - body_start);
    char end_modifier = source_[end_tag + 2];
    text_line_ = line_;
    apply_leading_whitespace_control_at(body, '%', end_modifier, end_tag);
    emit_text(body);
    advance_to(end_tag);
    size_t close = source_.find("%}", end_tag);
    char close_modifier = source_[close - 1];
    advance_to(close + 2);
    apply_trailing_whitespace_control(close_modifier, true);
    return true;
  }

  size_t find_endraw(size_t from) {
    for (size_t start = source_.find("{%", from); start != std::string::npos;
         start = source_.find("{%", start + 2)) {
      size_t cursor = start + 2;
      if (cursor < source_.size() && (source_[cursor] == '-' || source_[cursor] == '+')) ++cursor;
      while (cursor < source_.size() && is_space(source_[cursor])) ++cursor;
      if (source_.compare(cursor, 6, "endraw") != 0) continue;
      cursor += 6;
      while (cursor < source_.size() && is_space(source_[cursor])) ++cursor;
      if (cursor < source_.size() && (source_[cursor] == '-' || source_[cursor] == '+')) ++cursor;
      if (source_.compare(cursor, 2, "%}") == 0) return start;
    }
    throw_template_error(line_, "missing endraw for raw block");
  }

  // Tokens of one {{ ... }} or {% ... %} up to its closing delimiter.
  void lex_tag(TokenKind begin) {
    const TokenKind end_kind =
        begin == TokenKind::VariableBegin ? TokenKind::VariableEnd : TokenKind::BlockEnd;
    const char closer = begin == TokenKind::VariableBegin ? '}' : '%';
    const int start_line = line_;
    tokens_.push_back({begin, "", line_});
    int depth = 0;
    while (true) {
      size_t cursor = position_;
      while (cursor < source_.size() && is_space(source_[cursor])) ++cursor;
      advance_to(cursor);
      if (position_ >= source_.size()) {
        throw_template_error(start_line, "unexpected end of template inside a tag");
      }
      if (depth == 0 && try_tag_end(closer, end_kind)) return;
      lex_expression_token(depth);
    }
  }

  bool try_tag_end(char closer, TokenKind end_kind) {
    char modifier = source_[position_];
    size_t at = position_ + ((modifier == '-' || modifier == '+') ? 1 : 0);
    if (at + 1 >= source_.size()) return false;
    if (source_[at] != closer || source_[at + 1] != '}') return false;
    if (modifier == '+' && closer == '}') return false;
    tokens_.push_back({end_kind, "", line_});
    advance_to(at + 2);
    apply_trailing_whitespace_control(modifier, end_kind == TokenKind::BlockEnd);
    return true;
  }

  void lex_expression_token(int& depth) {
    char c = source_[position_];
    if (is_name_start(c)) {
      size_t end = position_;
      while (end < source_.size() && is_name_char(source_[end])) ++end;
      tokens_.push_back({TokenKind::Name, source_.substr(position_, end - position_), line_});
      position_ = end;
    } else if (is_digit(c)) {
      lex_number();
    } else if (c == '\'' || c == '"') {
      lex_string(c);
    } else {
      lex_operator(depth);
    }
  }

  void lex_number() {
    size_t end = position_;
    while (end < source_.size() && (is_digit(source_[end]) || source_[end] == '_')) ++end;
    bool after_dot = !tokens_.empty() && tokens_.back().kind == TokenKind::Operator &&
                     tokens_.back().text == ".";
    bool is_float = false;
    if (!after_dot && end + 1 < source_.size() && source_[end] == '.' &&
        is_digit(source_[end + 1])) {
      is_float = true;
      ++end;
      while (end < source_.size() && (is_digit(source_[end]) || source_[end] == '_')) ++end;
    }
    if (!after_dot && end < source_.size() && (source_[end] == 'e' || source_[end] == 'E')) {
      size_t exponent = end + 1;
      if (exponent < source_.size() && (source_[exponent] == '+' || source_[exponent] == '-')) {
        ++exponent;
      }
      if (exponent < source_.size() && is_digit(source_[exponent])) {
        is_float = true;
        end = exponent;
        while (end < source_.size() && is_digit(source_[end])) ++end;
      }
    }
    std::string text;
    for (size_t i = position_; i < end; ++i) {
      if (source_[i] != '_') text += source_[i];
    }
    Token token{is_float ? TokenKind::Float : TokenKind::Integer, text, line_};
    if (is_float)
      token.number = std::strtod(text.c_str(), nullptr);
    else
      token.integer = std::strtoll(text.c_str(), nullptr, 10);
    tokens_.push_back(token);
    position_ = end;
  }

  void lex_string(char quote) {
    size_t end = position_ + 1;
    while (end < source_.size() && source_[end] != quote) {
      end += source_[end] == '\\' ? 2 : 1;
    }
    if (end >= source_.size()) throw_template_error(line_, "unterminated string literal");
    std::string body = source_.substr(position_ + 1, end - position_ - 1);
    tokens_.push_back({TokenKind::String, decode_string_escapes(body, line_), line_});
    advance_to(end + 1);
  }

  void lex_operator(int& depth) {
    static const char* const kTwoCharacter[] = {"**", "//", "==", "!=", "<=", ">="};
    for (const char* op : kTwoCharacter) {
      if (source_.compare(position_, 2, op) == 0) {
        tokens_.push_back({TokenKind::Operator, op, line_});
        position_ += 2;
        return;
      }
    }
    char c = source_[position_];
    if (std::string("+-*/%~<>=()[]{},.:|").find(c) == std::string::npos) {
      throw_template_error(line_, "unexpected character '" + std::string(1, c) + "' in tag");
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') depth = depth > 0 ? depth - 1 : 0;
    tokens_.push_back({TokenKind::Operator, std::string(1, c), line_});
    ++position_;
  }

  std::string source_;
  LexerOptions options_;
  std::vector<Token> tokens_;
  size_t position_ = 0;
  int line_ = 1;       // line of position_
  int text_line_ = 1;  // line where the current text run began
};

}  // namespace

std::vector<Token> tokenize_template(const std::string& source, const LexerOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace mlx_cpp::jinja
