#pragma once
// Parses expressions with jinja2's grammar and operator precedence:
// conditional < or < and < not < comparison < + - < ~ < * / // % < ** <
// unary - + < postfix (.attr [item] (call)) < filters and tests.
#include "template/ast.h"
#include "template/token_cursor.h"

namespace mlx_cpp::jinja {

class ExpressionParser {
 public:
  explicit ExpressionParser(TokenCursor& tokens) : tokens_(tokens) {}

  // An expression, or a tuple when commas follow (`a, b`).
  ExpressionPointer parse_tuple(bool with_conditional);
  // One expression; without the conditional form (`a if b else c`) where
  // `if` means something else, as in `{% for x in xs if x %}`.
  ExpressionPointer parse_expression(bool with_conditional);
  // `| f(args) | g ...` applied to `node` (null: a {% filter %} / set block).
  ExpressionPointer parse_filters(ExpressionPointer node);
  // The same, with the cursor already past the first `|`.
  ExpressionPointer parse_filter_chain(ExpressionPointer node);

 private:
  bool can_start_expression() const;
  // Adds an operand (null: an omitted part) and keeps `node.height`,
  // failing when the tree would grow too tall.
  void attach(Expression& node, ExpressionPointer operand);
  ExpressionPointer binary(const std::string& op, ExpressionPointer left, ExpressionPointer right,
                           int line);
  ExpressionPointer parse_one_filter(ExpressionPointer node);
  // Binary operators from `level` (0: or) down to `**`.
  ExpressionPointer parse_binary(size_t level);
  ExpressionPointer parse_not();
  ExpressionPointer parse_compare();
  ExpressionPointer parse_unary(bool with_filter);
  ExpressionPointer parse_primary();
  ExpressionPointer parse_postfix(ExpressionPointer node);
  ExpressionPointer parse_call(ExpressionPointer callee);
  ExpressionPointer parse_subscript(ExpressionPointer node);
  ExpressionPointer parse_filter_expression(ExpressionPointer node);
  ExpressionPointer parse_test(ExpressionPointer node);
  void parse_call_arguments(Expression& call);

  TokenCursor& tokens_;
};

}  // namespace mlx_cpp::jinja
