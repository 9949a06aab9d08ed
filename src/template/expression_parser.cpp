#include "template/expression_parser.h"

#include <algorithm>

#include "template/builtins.h"

namespace mlx_cpp::jinja {
namespace {

using Kind = Expression::Kind;

ExpressionPointer make_expression(Kind kind, int line) {
  auto expression = std::make_unique<Expression>();
  expression->kind = kind;
  expression->line = line;
  return expression;
}

// Long chains (`a + b + c ...`, `x | f | f ...`) are parsed by loops, not
// recursion, so the parser's nesting guard does not see them; their tree
// would still make evaluating (and destroying) it recurse once per link.
constexpr int kMaxExpressionHeight = 256;

}  // namespace

void ExpressionParser::attach(Expression& node, ExpressionPointer operand) {
  if (operand) {
    if (operand->height >= kMaxExpressionHeight)
      tokens_.fail("expression nested deeper than " + std::to_string(kMaxExpressionHeight) +
                   " levels");
    node.height = std::max(node.height, operand->height + 1);
  }
  node.operands.push_back(std::move(operand));
}

ExpressionPointer ExpressionParser::binary(const std::string& op, ExpressionPointer left,
                                           ExpressionPointer right, int line) {
  auto node = make_expression(Kind::Binary, line);
  node->name = op;
  attach(*node, std::move(left));
  attach(*node, std::move(right));
  return node;
}

bool ExpressionParser::can_start_expression() const {
  const Token& token = tokens_.current();
  if (token.kind == TokenKind::Name || token.kind == TokenKind::String ||
      token.kind == TokenKind::Integer || token.kind == TokenKind::Float) {
    return true;
  }
  return token.kind == TokenKind::Operator &&
         (token.text == "(" || token.text == "[" || token.text == "{" || token.text == "-" ||
          token.text == "+");
}

// An expression, or a tuple when commas follow (`a, b`).
ExpressionPointer ExpressionParser::parse_tuple(bool with_conditional) {
  int line = tokens_.current().line;
  ExpressionPointer first = parse_expression(with_conditional);
  if (!tokens_.at_operator(",")) return first;
  auto tuple = make_expression(Kind::TupleLiteral, line);
  attach(*tuple, std::move(first));
  while (tokens_.skip_operator(",")) {
    if (!can_start_expression()) break;
    attach(*tuple, parse_expression(with_conditional));
  }
  return tuple;
}

ExpressionPointer ExpressionParser::parse_expression(bool with_conditional) {
  TokenCursor::NestingGuard guard(tokens_);  // `else` recurses once per link
  if (!with_conditional) return parse_binary(0);
  ExpressionPointer value = parse_binary(0);
  while (tokens_.at_name("if")) {
    auto conditional = make_expression(Kind::Conditional, tokens_.advance().line);
    ExpressionPointer condition = parse_binary(0);
    ExpressionPointer otherwise = tokens_.skip_name("else") ? parse_expression(true) : nullptr;
    attach(*conditional, std::move(value));
    attach(*conditional, std::move(condition));
    attach(*conditional, std::move(otherwise));
    value = std::move(conditional);
  }
  return value;
}

// Left-associative binary operators, loosest first; `not` and comparisons
// sit between "and" and "+ -", as in jinja2.
struct BinaryLevel {
  std::vector<const char*> operators;
  bool are_words;  // `or`, `and` are names, the others operator tokens
};
const BinaryLevel kBinaryLevels[] = {
    {{"or"}, true},
    {{"and"}, true},
    {{"+", "-"}, false},
    {{"~"}, false},
    {{"*", "/", "//", "%"}, false},
    {{"**"}, false},
};
constexpr size_t kAndLevel = 1;
constexpr size_t kAdditiveLevel = 2;
constexpr size_t kLevelCount = sizeof(kBinaryLevels) / sizeof(kBinaryLevels[0]);

ExpressionPointer ExpressionParser::parse_binary(size_t level) {
  auto operand = [&]() -> ExpressionPointer {
    if (level == kAndLevel) return parse_not();
    if (level + 1 == kLevelCount) return parse_unary(true);
    return parse_binary(level + 1);
  };
  ExpressionPointer left = operand();
  while (true) {
    const BinaryLevel& binary_level = kBinaryLevels[level];
    const char* matched = nullptr;
    for (const char* op : binary_level.operators) {
      if (binary_level.are_words ? tokens_.at_name(op) : tokens_.at_operator(op)) matched = op;
    }
    if (!matched) return left;
    int line = tokens_.advance().line;
    left = binary(matched, std::move(left), operand(), line);
  }
}

ExpressionPointer ExpressionParser::parse_not() {
  TokenCursor::NestingGuard guard(tokens_);
  if (tokens_.at_name("not")) {
    auto node = make_expression(Kind::Not, tokens_.advance().line);
    attach(*node, parse_not());
    return node;
  }
  return parse_compare();
}

ExpressionPointer ExpressionParser::parse_compare() {
  int line = tokens_.current().line;
  ExpressionPointer first = parse_binary(kAdditiveLevel);
  ExpressionPointer compare;
  while (true) {
    std::string op;
    const Token& token = tokens_.current();
    if (token.kind == TokenKind::Operator &&
        (token.text == "==" || token.text == "!=" || token.text == "<" || token.text == "<=" ||
         token.text == ">" || token.text == ">=")) {
      op = tokens_.advance().text;
    } else if (tokens_.skip_name("in")) {
      op = "in";
    } else if (tokens_.at_name("not") && tokens_.peek().kind == TokenKind::Name &&
               tokens_.peek().text == "in") {
      tokens_.advance();
      tokens_.advance();
      op = "not in";
    } else {
      break;
    }
    if (!compare) {
      compare = make_expression(Kind::Compare, line);
      attach(*compare, std::move(first));
    }
    compare->comparators.push_back(op);
    attach(*compare, parse_binary(kAdditiveLevel));
  }
  return compare ? std::move(compare) : std::move(first);
}

ExpressionPointer ExpressionParser::parse_unary(bool with_filter) {
  TokenCursor::NestingGuard guard(tokens_);
  ExpressionPointer node;
  if (tokens_.at_operator("-") || tokens_.at_operator("+")) {
    const Token& token = tokens_.advance();
    node = make_expression(token.text == "-" ? Kind::Negate : Kind::Plus, token.line);
    attach(*node, parse_unary(false));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expression(std::move(node));
  return node;
}

ExpressionPointer ExpressionParser::parse_primary() {
  const Token& token = tokens_.current();
  auto literal = [&](Value value) {
    auto node = make_expression(Kind::Literal, token.line);
    node->literal = std::move(value);
    return node;
  };
  switch (token.kind) {
    case TokenKind::Name: {
      tokens_.advance();
      const std::string& name = token.text;
      if (name == "true" || name == "True") return literal(Value(true));
      if (name == "false" || name == "False") return literal(Value(false));
      if (name == "none" || name == "None") return literal(Value());
      auto node = make_expression(Kind::Name, token.line);
      node->name = name;
      return node;
    }
    case TokenKind::String: {
      std::string text = tokens_.advance().text;
      while (tokens_.current().kind == TokenKind::String)
        text += tokens_.advance().text;  // "a" "b"
      return literal(Value(text));
    }
    case TokenKind::Integer:
      tokens_.advance();
      return literal(Value(token.integer));
    case TokenKind::Float:
      tokens_.advance();
      return literal(Value(token.number));
    default:
      break;
  }
  if (tokens_.skip_operator("(")) {
    if (tokens_.skip_operator(")")) return make_expression(Kind::TupleLiteral, token.line);
    ExpressionPointer inner = parse_tuple(true);
    tokens_.expect_operator(")");
    return inner;
  }
  if (tokens_.skip_operator("[")) {
    auto list = make_expression(Kind::ListLiteral, token.line);
    while (!tokens_.skip_operator("]")) {
      if (!list->operands.empty()) tokens_.expect_operator(",");
      if (tokens_.skip_operator("]")) break;
      attach(*list, parse_expression(true));
    }
    return list;
  }
  if (tokens_.skip_operator("{")) {
    auto dict = make_expression(Kind::DictLiteral, token.line);
    while (!tokens_.skip_operator("}")) {
      if (!dict->operands.empty()) tokens_.expect_operator(",");
      if (tokens_.skip_operator("}")) break;
      attach(*dict, parse_expression(true));
      tokens_.expect_operator(":");
      attach(*dict, parse_expression(true));
    }
    return dict;
  }
  tokens_.fail("unexpected " + describe_token(token));
}

ExpressionPointer ExpressionParser::parse_postfix(ExpressionPointer node) {
  while (true) {
    if (tokens_.at_operator(".")) {
      int line = tokens_.advance().line;
      auto attribute = make_expression(Kind::Attribute, line);
      if (tokens_.current().kind == TokenKind::Integer) {  // x.0 is x[0]
        attribute->kind = Kind::Item;
        auto index = make_expression(Kind::Literal, line);
        index->literal = Value(tokens_.advance().integer);
        attach(*attribute, std::move(node));
        attach(*attribute, std::move(index));
      } else {
        attribute->name = tokens_.expect_name();
        attach(*attribute, std::move(node));
      }
      node = std::move(attribute);
    } else if (tokens_.at_operator("[")) {
      node = parse_subscript(std::move(node));
    } else if (tokens_.at_operator("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExpressionPointer ExpressionParser::parse_call(ExpressionPointer callee) {
  auto call = make_expression(Kind::Call, tokens_.current().line);
  attach(*call, std::move(callee));
  parse_call_arguments(*call);
  return call;
}

ExpressionPointer ExpressionParser::parse_subscript(ExpressionPointer node) {
  int line = tokens_.advance().line;  // [
  std::vector<ExpressionPointer> parts(1);
  bool is_slice = false;
  while (!tokens_.at_operator("]")) {
    if (tokens_.skip_operator(":")) {
      is_slice = true;
      if (parts.size() >= 3) tokens_.fail("too many ':' in slice");
      parts.emplace_back();
      continue;
    }
    if (parts.back()) tokens_.fail("expected ']' or ':', got " + describe_token(tokens_.current()));
    parts.back() = parse_expression(true);
  }
  tokens_.advance();
  if (!is_slice) {
    if (!parts[0]) tokens_.fail("empty subscript");
    auto item = make_expression(Kind::Item, line);
    attach(*item, std::move(node));
    attach(*item, std::move(parts[0]));
    return item;
  }
  auto slice = make_expression(Kind::Slice, line);
  attach(*slice, std::move(node));
  parts.resize(3);
  for (auto& part : parts) attach(*slice, std::move(part));
  return slice;
}

ExpressionPointer ExpressionParser::parse_filter_expression(ExpressionPointer node) {
  while (true) {
    if (tokens_.at_operator("|")) {
      node = parse_filters(std::move(node));
    } else if (tokens_.at_name("is")) {
      node = parse_test(std::move(node));
    } else if (tokens_.at_operator("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

// `| name(args) | name2 ...` after an expression.
ExpressionPointer ExpressionParser::parse_filters(ExpressionPointer node) {
  while (tokens_.skip_operator("|")) node = parse_one_filter(std::move(node));
  return node;
}

// One filter `name(args)`, then any `| more` that follow it.
ExpressionPointer ExpressionParser::parse_filter_chain(ExpressionPointer node) {
  return parse_filters(parse_one_filter(std::move(node)));
}

ExpressionPointer ExpressionParser::parse_one_filter(ExpressionPointer node) {
  int line = tokens_.current().line;
  std::string name = tokens_.expect_name();
  auto filter = make_expression(Kind::Filter, line);
  filter->name = name;
  attach(*filter, std::move(node));
  if (tokens_.at_operator("(")) parse_call_arguments(*filter);
  return filter;
}

ExpressionPointer ExpressionParser::parse_test(ExpressionPointer node) {
  int line = tokens_.advance().line;  // is
  auto test = make_expression(Kind::Test, line);
  test->negated = tokens_.skip_name("not");
  test->name = tokens_.expect_name();
  attach(*test, std::move(node));
  if (tokens_.at_operator("(")) {
    parse_call_arguments(*test);
  } else if ((tokens_.current().kind == TokenKind::Name ||
              tokens_.current().kind == TokenKind::String ||
              tokens_.current().kind == TokenKind::Integer ||
              tokens_.current().kind == TokenKind::Float || tokens_.at_operator("[") ||
              tokens_.at_operator("{")) &&
             !tokens_.at_name("else") && !tokens_.at_name("or") && !tokens_.at_name("and")) {
    if (tokens_.at_name("is")) tokens_.fail("you cannot chain multiple tests with is");
    attach(*test, parse_postfix(parse_primary()));
  }
  return test;
}

void ExpressionParser::parse_call_arguments(Expression& call) {
  tokens_.expect_operator("(");
  bool first = true;
  while (!tokens_.skip_operator(")")) {
    if (!first) tokens_.expect_operator(",");
    first = false;
    if (tokens_.skip_operator(")")) break;
    if (tokens_.at_operator("*") || tokens_.at_operator("**"))
      tokens_.fail("*args and **kwargs calls are not supported");
    if (tokens_.current().kind == TokenKind::Name && tokens_.peek().kind == TokenKind::Operator &&
        tokens_.peek().text == "=") {
      std::string name = tokens_.advance().text;
      tokens_.advance();
      ExpressionPointer value = parse_expression(true);
      if (value->height >= kMaxExpressionHeight)
        tokens_.fail("expression nested deeper than " + std::to_string(kMaxExpressionHeight) +
                     " levels");
      call.height = std::max(call.height, value->height + 1);
      call.keyword_arguments.emplace_back(name, std::move(value));
    } else {
      if (!call.keyword_arguments.empty())
        tokens_.fail("positional argument after keyword argument");
      attach(call, parse_expression(true));
    }
  }
}

}  // namespace mlx_cpp::jinja
