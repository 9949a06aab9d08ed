#pragma once
// A cursor over the token stream shared by the statement and expression
// parsers: look-ahead, expectations that fail with the token's line, and a
// nesting bound so a hostile template cannot overflow the stack.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "template/lexer.h"
#include "template/template_error.h"

namespace mlx_cpp::jinja {

// How a token reads in a syntax error: "'foo'", "end of template", ...
std::string describe_token(const Token& token);

class TokenCursor {
 public:
  explicit TokenCursor(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  const Token& current() const { return tokens_[index_]; }
  const Token& peek(size_t ahead = 1) const {
    return tokens_[std::min(index_ + ahead, tokens_.size() - 1)];
  }
  const Token& advance() {
    const Token& token = tokens_[index_];
    if (index_ + 1 < tokens_.size()) ++index_;
    return token;
  }
  bool at_operator(const char* op) const {
    return current().kind == TokenKind::Operator && current().text == op;
  }
  bool at_name(const char* name) const {
    return current().kind == TokenKind::Name && current().text == name;
  }
  bool skip_operator(const char* op) {
    if (!at_operator(op)) return false;
    advance();
    return true;
  }
  bool skip_name(const char* name) {
    if (!at_name(name)) return false;
    advance();
    return true;
  }
  [[noreturn]] void fail(const std::string& message) const {
    throw_template_error(current().line, message);
  }
  void expect_operator(const char* op) {
    if (!skip_operator(op))
      fail("expected '" + std::string(op) + "', got " + describe_token(current()));
  }
  void expect(TokenKind kind, const char* what) {
    if (current().kind != kind)
      fail(std::string("expected ") + what + ", got " + describe_token(current()));
    advance();
  }
  std::string expect_name() {
    if (current().kind != TokenKind::Name)
      fail("expected a name, got " + describe_token(current()));
    return advance().text;
  }

  // Counts nested expressions and blocks while alive.
  class NestingGuard {
   public:
    explicit NestingGuard(TokenCursor& cursor) : cursor_(cursor) {
      if (++cursor_.nesting_ > kMaxNesting) cursor_.fail("template nested too deeply");
    }
    ~NestingGuard() { --cursor_.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    TokenCursor& cursor_;
  };

 private:
  static constexpr int kMaxNesting = 200;
  std::vector<Token> tokens_;
  size_t index_ = 0;
  int nesting_ = 0;
};

}  // namespace mlx_cpp::jinja
