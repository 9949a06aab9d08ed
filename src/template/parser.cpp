#include "template/parser.h"

#include <algorithm>

#include "template/builtins.h"
#include "template/lexer.h"
#include "template/template_error.h"

namespace mlx_cpp::jinja {
namespace {

using Kind = Expression::Kind;

ExpressionPointer make_expression(Kind kind, int line) {
  auto expression = std::make_unique<Expression>();
  expression->kind = kind;
  expression->line = line;
  return expression;
}

StatementPointer make_statement(Statement::Kind kind, int line) {
  auto statement = std::make_unique<Statement>();
  statement->kind = kind;
  statement->line = line;
  return statement;
}

std::string describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::Text:
      return "text";
    case TokenKind::VariableBegin:
      return "'{{'";
    case TokenKind::VariableEnd:
      return "end of print statement";
    case TokenKind::BlockBegin:
      return "'{%'";
    case TokenKind::BlockEnd:
      return "end of statement block";
    case TokenKind::EndOfInput:
      return "end of template";
    default:
      return "'" + token.text + "'";
  }
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  TemplateTree parse() {
    TemplateTree tree;
    std::string found;
    tree.body = parse_statements({}, found);
    return tree;
  }

 private:
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
    if (!skip_operator(op)) fail("expected '" + std::string(op) + "', got " + describe(current()));
  }
  void expect(TokenKind kind, const char* what) {
    if (current().kind != kind)
      fail(std::string("expected ") + what + ", got " + describe(current()));
    advance();
  }
  std::string expect_name() {
    if (current().kind != TokenKind::Name) fail("expected a name, got " + describe(current()));
    return advance().text;
  }

  // ---- statements ----

  // Parses until a block tag whose name is in `terminators`; consumes "{%"
  // and that name and reports it in `found`.
  StatementList parse_statements(const std::vector<std::string>& terminators, std::string& found) {
    StatementList body;
    while (true) {
      const Token& token = current();
      if (token.kind == TokenKind::EndOfInput) {
        if (!terminators.empty()) {
          fail("unexpected end of template, expected '" + terminators.back() + "'");
        }
        return body;
      }
      if (token.kind == TokenKind::Text) {
        auto text = make_statement(Statement::Kind::Text, token.line);
        text->text = token.text;
        body.push_back(std::move(text));
        advance();
      } else if (token.kind == TokenKind::VariableBegin) {
        auto output = make_statement(Statement::Kind::Output, token.line);
        advance();
        output->expression = parse_tuple(true);
        expect(TokenKind::VariableEnd, "end of print statement");
        body.push_back(std::move(output));
      } else if (token.kind == TokenKind::BlockBegin) {
        const Token& name = peek();
        if (name.kind == TokenKind::Name &&
            std::find(terminators.begin(), terminators.end(), name.text) != terminators.end()) {
          advance();
          found = advance().text;
          return body;
        }
        advance();
        body.push_back(parse_block_statement());
      } else {
        fail("unexpected " + describe(token));
      }
    }
  }

  StatementPointer parse_block_statement() {
    NestingGuard guard(*this);
    const Token& token = current();
    if (token.kind != TokenKind::Name) fail("expected a statement name, got " + describe(token));
    std::string name = advance().text;
    int line = token.line;
    if (name == "if") return parse_if(line);
    if (name == "for") return parse_for(line);
    if (name == "set") return parse_set(line);
    if (name == "macro") return parse_macro(line);
    if (name == "call") return parse_call_block(line);
    if (name == "filter") return parse_filter_block(line);
    if (name == "generation") return parse_scope(line, "endgeneration");
    if (name == "break" || name == "continue") {
      expect(TokenKind::BlockEnd, "end of statement block");
      return make_statement(name == "break" ? Statement::Kind::Break : Statement::Kind::Continue,
                            line);
    }
    throw_template_error(line, "unknown or unsupported tag '" + name + "'");
  }

  // Parses a body up to `end_name` and the end of that closing tag.
  StatementList parse_body_until(const char* end_name) {
    std::string found;
    StatementList body = parse_statements({end_name}, found);
    expect(TokenKind::BlockEnd, "end of statement block");
    return body;
  }

  StatementPointer parse_if(int line) {
    auto statement = make_statement(Statement::Kind::If, line);
    statement->condition = parse_tuple(false);
    expect(TokenKind::BlockEnd, "end of statement block");
    std::string found;
    statement->body = parse_statements({"elif", "else", "endif"}, found);
    if (found == "elif") {
      statement->else_body.push_back(parse_if(current().line));
      return statement;
    }
    expect(TokenKind::BlockEnd, "end of statement block");
    if (found == "else") statement->else_body = parse_body_until("endif");
    return statement;
  }

  std::vector<std::string> parse_assign_targets() {
    std::vector<std::string> targets;
    bool parenthesized = skip_operator("(");
    do {
      if (!targets.empty() && current().kind != TokenKind::Name) break;  // trailing comma
      targets.push_back(expect_name());
    } while (skip_operator(","));
    if (parenthesized) expect_operator(")");
    return targets;
  }

  StatementPointer parse_for(int line) {
    auto statement = make_statement(Statement::Kind::For, line);
    statement->targets = parse_assign_targets();
    if (!skip_name("in")) fail("expected 'in' in for loop, got " + describe(current()));
    statement->expression = parse_tuple(false);
    if (skip_name("if")) statement->condition = parse_expression(true);
    if (at_name("recursive")) fail("recursive for loops are not supported");
    expect(TokenKind::BlockEnd, "end of statement block");
    std::string found;
    statement->body = parse_statements({"else", "endfor"}, found);
    expect(TokenKind::BlockEnd, "end of statement block");
    if (found == "else") statement->else_body = parse_body_until("endfor");
    return statement;
  }

  StatementPointer parse_set(int line) {
    if (current().kind == TokenKind::Name && peek().kind == TokenKind::Operator &&
        peek().text == ".") {
      auto statement = make_statement(Statement::Kind::Set, line);
      statement->name = advance().text;
      advance();
      statement->attribute = expect_name();
      expect_operator("=");
      statement->expression = parse_tuple(true);
      expect(TokenKind::BlockEnd, "end of statement block");
      return statement;
    }
    std::vector<std::string> targets = parse_assign_targets();
    if (skip_operator("=")) {
      auto statement = make_statement(Statement::Kind::Set, line);
      statement->targets = std::move(targets);
      statement->expression = parse_tuple(true);
      expect(TokenKind::BlockEnd, "end of statement block");
      return statement;
    }
    auto statement = make_statement(Statement::Kind::SetBlock, line);
    statement->targets = std::move(targets);
    if (at_operator("|")) statement->filter = parse_filters(nullptr);
    expect(TokenKind::BlockEnd, "end of statement block");
    statement->body = parse_body_until("endset");
    return statement;
  }

  std::vector<Parameter> parse_parameters() {
    std::vector<Parameter> parameters;
    expect_operator("(");
    while (!skip_operator(")")) {
      if (!parameters.empty()) expect_operator(",");
      if (skip_operator(")")) break;
      Parameter parameter;
      parameter.name = expect_name();
      if (skip_operator("=")) parameter.default_value = parse_expression(true);
      parameters.push_back(std::move(parameter));
    }
    return parameters;
  }

  StatementPointer parse_macro(int line) {
    auto statement = make_statement(Statement::Kind::Macro, line);
    statement->name = expect_name();
    statement->parameters = parse_parameters();
    expect(TokenKind::BlockEnd, "end of statement block");
    statement->body = parse_body_until("endmacro");
    return statement;
  }

  StatementPointer parse_call_block(int line) {
    auto statement = make_statement(Statement::Kind::CallBlock, line);
    if (at_operator("(")) statement->parameters = parse_parameters();
    statement->expression = parse_expression(true);
    if (statement->expression->kind != Kind::Call) fail("expected a call in {% call %}");
    expect(TokenKind::BlockEnd, "end of statement block");
    statement->body = parse_body_until("endcall");
    return statement;
  }

  StatementPointer parse_filter_block(int line) {
    auto statement = make_statement(Statement::Kind::FilterBlock, line);
    statement->filter = parse_filter_chain(nullptr);
    expect(TokenKind::BlockEnd, "end of statement block");
    statement->body = parse_body_until("endfilter");
    return statement;
  }

  StatementPointer parse_scope(int line, const char* end_name) {
    auto statement = make_statement(Statement::Kind::Scope, line);
    expect(TokenKind::BlockEnd, "end of statement block");
    statement->body = parse_body_until(end_name);
    return statement;
  }

  // ---- expressions ----

  bool can_start_expression() const {
    const Token& token = current();
    if (token.kind == TokenKind::Name || token.kind == TokenKind::String ||
        token.kind == TokenKind::Integer || token.kind == TokenKind::Float) {
      return true;
    }
    return token.kind == TokenKind::Operator &&
           (token.text == "(" || token.text == "[" || token.text == "{" || token.text == "-" ||
            token.text == "+");
  }

  // An expression, or a tuple when commas follow (`a, b`).
  ExpressionPointer parse_tuple(bool with_conditional) {
    int line = current().line;
    ExpressionPointer first = parse_expression(with_conditional);
    if (!at_operator(",")) return first;
    auto tuple = make_expression(Kind::TupleLiteral, line);
    tuple->operands.push_back(std::move(first));
    while (skip_operator(",")) {
      if (!can_start_expression()) break;
      tuple->operands.push_back(parse_expression(with_conditional));
    }
    return tuple;
  }

  ExpressionPointer parse_expression(bool with_conditional) {
    if (!with_conditional) return parse_or();
    ExpressionPointer value = parse_or();
    while (at_name("if")) {
      auto conditional = make_expression(Kind::Conditional, advance().line);
      ExpressionPointer condition = parse_or();
      ExpressionPointer otherwise = skip_name("else") ? parse_expression(true) : nullptr;
      conditional->operands.push_back(std::move(value));
      conditional->operands.push_back(std::move(condition));
      conditional->operands.push_back(std::move(otherwise));
      value = std::move(conditional);
    }
    return value;
  }

  ExpressionPointer binary(const std::string& op, ExpressionPointer left, ExpressionPointer right,
                           int line) {
    auto node = make_expression(Kind::Binary, line);
    node->name = op;
    node->operands.push_back(std::move(left));
    node->operands.push_back(std::move(right));
    return node;
  }

  ExpressionPointer parse_or() {
    ExpressionPointer left = parse_and();
    while (at_name("or")) {
      int line = advance().line;
      left = binary("or", std::move(left), parse_and(), line);
    }
    return left;
  }

  ExpressionPointer parse_and() {
    ExpressionPointer left = parse_not();
    while (at_name("and")) {
      int line = advance().line;
      left = binary("and", std::move(left), parse_not(), line);
    }
    return left;
  }

  ExpressionPointer parse_not() {
    if (at_name("not")) {
      auto node = make_expression(Kind::Not, advance().line);
      node->operands.push_back(parse_not());
      return node;
    }
    return parse_compare();
  }

  ExpressionPointer parse_compare() {
    int line = current().line;
    ExpressionPointer first = parse_math1();
    ExpressionPointer compare;
    while (true) {
      std::string op;
      const Token& token = current();
      if (token.kind == TokenKind::Operator &&
          (token.text == "==" || token.text == "!=" || token.text == "<" || token.text == "<=" ||
           token.text == ">" || token.text == ">=")) {
        op = advance().text;
      } else if (skip_name("in")) {
        op = "in";
      } else if (at_name("not") && peek().kind == TokenKind::Name && peek().text == "in") {
        advance();
        advance();
        op = "not in";
      } else {
        break;
      }
      if (!compare) {
        compare = make_expression(Kind::Compare, line);
        compare->operands.push_back(std::move(first));
      }
      compare->comparators.push_back(op);
      compare->operands.push_back(parse_math1());
    }
    return compare ? std::move(compare) : std::move(first);
  }

  ExpressionPointer parse_math1() {
    ExpressionPointer left = parse_concat();
    while (at_operator("+") || at_operator("-")) {
      const Token& token = advance();
      left = binary(token.text, std::move(left), parse_concat(), token.line);
    }
    return left;
  }

  ExpressionPointer parse_concat() {
    ExpressionPointer left = parse_math2();
    while (at_operator("~")) {
      int line = advance().line;
      left = binary("~", std::move(left), parse_math2(), line);
    }
    return left;
  }

  ExpressionPointer parse_math2() {
    ExpressionPointer left = parse_pow();
    while (at_operator("*") || at_operator("/") || at_operator("//") || at_operator("%")) {
      const Token& token = advance();
      left = binary(token.text, std::move(left), parse_pow(), token.line);
    }
    return left;
  }

  ExpressionPointer parse_pow() {
    ExpressionPointer left = parse_unary(true);
    while (at_operator("**")) {
      int line = advance().line;
      left = binary("**", std::move(left), parse_unary(true), line);
    }
    return left;
  }

  // Bounds recursion so a hostile template cannot overflow the stack.
  struct NestingGuard {
    NestingGuard(Parser& parser) : parser_(parser) {
      if (++parser_.nesting_ > kMaxNesting) parser_.fail("template nested too deeply");
    }
    ~NestingGuard() { --parser_.nesting_; }
    Parser& parser_;
  };
  static constexpr int kMaxNesting = 200;

  ExpressionPointer parse_unary(bool with_filter) {
    NestingGuard guard(*this);
    ExpressionPointer node;
    if (at_operator("-") || at_operator("+")) {
      const Token& token = advance();
      node = make_expression(token.text == "-" ? Kind::Negate : Kind::Plus, token.line);
      node->operands.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expression(std::move(node));
    return node;
  }

  ExpressionPointer parse_primary();
  ExpressionPointer parse_postfix(ExpressionPointer node);
  ExpressionPointer parse_subscript(ExpressionPointer node);
  ExpressionPointer parse_filter_expression(ExpressionPointer node);
  ExpressionPointer parse_filters(ExpressionPointer node);
  ExpressionPointer parse_filter_chain(ExpressionPointer node);
  ExpressionPointer parse_test(ExpressionPointer node);
  void parse_call_arguments(Expression& call);

  std::vector<Token> tokens_;
  size_t index_ = 0;
  int nesting_ = 0;
};

ExpressionPointer Parser::parse_primary() {
  const Token& token = current();
  auto literal = [&](Value value) {
    auto node = make_expression(Kind::Literal, token.line);
    node->literal = std::move(value);
    return node;
  };
  switch (token.kind) {
    case TokenKind::Name: {
      advance();
      const std::string& name = token.text;
      if (name == "true" || name == "True") return literal(Value(true));
      if (name == "false" || name == "False") return literal(Value(false));
      if (name == "none" || name == "None") return literal(Value());
      auto node = make_expression(Kind::Name, token.line);
      node->name = name;
      return node;
    }
    case TokenKind::String: {
      std::string text = advance().text;
      while (current().kind == TokenKind::String) text += advance().text;  // "a" "b"
      return literal(Value(text));
    }
    case TokenKind::Integer:
      advance();
      return literal(Value(token.integer));
    case TokenKind::Float:
      advance();
      return literal(Value(token.number));
    default:
      break;
  }
  if (skip_operator("(")) {
    if (skip_operator(")")) return make_expression(Kind::TupleLiteral, token.line);
    ExpressionPointer inner = parse_tuple(true);
    expect_operator(")");
    return inner;
  }
  if (skip_operator("[")) {
    auto list = make_expression(Kind::ListLiteral, token.line);
    while (!skip_operator("]")) {
      if (!list->operands.empty()) expect_operator(",");
      if (skip_operator("]")) break;
      list->operands.push_back(parse_expression(true));
    }
    return list;
  }
  if (skip_operator("{")) {
    auto dict = make_expression(Kind::DictLiteral, token.line);
    while (!skip_operator("}")) {
      if (!dict->operands.empty()) expect_operator(",");
      if (skip_operator("}")) break;
      dict->operands.push_back(parse_expression(true));
      expect_operator(":");
      dict->operands.push_back(parse_expression(true));
    }
    return dict;
  }
  fail("unexpected " + describe(token));
}

ExpressionPointer Parser::parse_postfix(ExpressionPointer node) {
  while (true) {
    if (at_operator(".")) {
      int line = advance().line;
      auto attribute = make_expression(Kind::Attribute, line);
      if (current().kind == TokenKind::Integer) {  // x.0 is x[0]
        attribute->kind = Kind::Item;
        auto index = make_expression(Kind::Literal, line);
        index->literal = Value(advance().integer);
        attribute->operands.push_back(std::move(node));
        attribute->operands.push_back(std::move(index));
      } else {
        attribute->name = expect_name();
        attribute->operands.push_back(std::move(node));
      }
      node = std::move(attribute);
    } else if (at_operator("[")) {
      node = parse_subscript(std::move(node));
    } else if (at_operator("(")) {
      auto call = make_expression(Kind::Call, current().line);
      call->operands.push_back(std::move(node));
      parse_call_arguments(*call);
      node = std::move(call);
    } else {
      return node;
    }
  }
}

ExpressionPointer Parser::parse_subscript(ExpressionPointer node) {
  int line = advance().line;  // [
  std::vector<ExpressionPointer> parts(1);
  bool is_slice = false;
  while (!at_operator("]")) {
    if (skip_operator(":")) {
      is_slice = true;
      if (parts.size() >= 3) fail("too many ':' in slice");
      parts.emplace_back();
      continue;
    }
    if (parts.back()) fail("expected ']' or ':', got " + describe(current()));
    parts.back() = parse_expression(true);
  }
  advance();
  if (!is_slice) {
    if (!parts[0]) fail("empty subscript");
    auto item = make_expression(Kind::Item, line);
    item->operands.push_back(std::move(node));
    item->operands.push_back(std::move(parts[0]));
    return item;
  }
  auto slice = make_expression(Kind::Slice, line);
  slice->operands.push_back(std::move(node));
  parts.resize(3);
  for (auto& part : parts) slice->operands.push_back(std::move(part));
  return slice;
}

ExpressionPointer Parser::parse_filter_expression(ExpressionPointer node) {
  while (true) {
    if (at_operator("|")) {
      node = parse_filters(std::move(node));
    } else if (at_name("is")) {
      node = parse_test(std::move(node));
    } else if (at_operator("(")) {
      auto call = make_expression(Kind::Call, current().line);
      call->operands.push_back(std::move(node));
      parse_call_arguments(*call);
      node = std::move(call);
    } else {
      return node;
    }
  }
}

// `| name(args) | name2 ...` after an expression.
ExpressionPointer Parser::parse_filters(ExpressionPointer node) {
  while (skip_operator("|")) node = parse_filter_chain(std::move(node));
  return node;
}

// One filter `name(args)`, then any `| more` that follow it.
ExpressionPointer Parser::parse_filter_chain(ExpressionPointer node) {
  int line = current().line;
  std::string name = expect_name();
  auto filter = make_expression(Kind::Filter, line);
  filter->name = name;
  filter->operands.push_back(std::move(node));
  if (at_operator("(")) parse_call_arguments(*filter);
  if (at_operator("|")) return parse_filters(std::move(filter));
  return filter;
}

ExpressionPointer Parser::parse_test(ExpressionPointer node) {
  int line = advance().line;  // is
  auto test = make_expression(Kind::Test, line);
  test->negated = skip_name("not");
  test->name = expect_name();
  test->operands.push_back(std::move(node));
  if (at_operator("(")) {
    parse_call_arguments(*test);
  } else if ((current().kind == TokenKind::Name || current().kind == TokenKind::String ||
              current().kind == TokenKind::Integer || current().kind == TokenKind::Float ||
              at_operator("[") || at_operator("{")) &&
             !at_name("else") && !at_name("or") && !at_name("and")) {
    if (at_name("is")) fail("you cannot chain multiple tests with is");
    test->operands.push_back(parse_postfix(parse_primary()));
  }
  return test;
}

void Parser::parse_call_arguments(Expression& call) {
  expect_operator("(");
  bool first = true;
  while (!skip_operator(")")) {
    if (!first) expect_operator(",");
    first = false;
    if (skip_operator(")")) break;
    if (at_operator("*") || at_operator("**")) fail("*args and **kwargs calls are not supported");
    if (current().kind == TokenKind::Name && peek().kind == TokenKind::Operator &&
        peek().text == "=") {
      std::string name = advance().text;
      advance();
      call.keyword_arguments.emplace_back(name, parse_expression(true));
    } else {
      if (!call.keyword_arguments.empty()) fail("positional argument after keyword argument");
      call.operands.push_back(parse_expression(true));
    }
  }
}

// jinja2 rejects an unknown filter or test when it compiles the template,
// except inside an if statement or an inline if (a "soft" frame), where it
// fails only if that code runs. For-loop and macro bodies are not soft.
void check_names(const Expression* expression, bool soft) {
  if (!expression) return;
  if (!soft && expression->kind == Kind::Filter && !is_known_filter(expression->name)) {
    throw_template_error(expression->line, "no filter named '" + expression->name + "'");
  }
  if (!soft && expression->kind == Kind::Test && !is_known_test(expression->name)) {
    throw_template_error(expression->line, "no test named '" + expression->name + "'");
  }
  bool operands_soft = soft || expression->kind == Kind::Conditional;
  for (const auto& operand : expression->operands) check_names(operand.get(), operands_soft);
  for (const auto& [name, argument] : expression->keyword_arguments) {
    check_names(argument.get(), operands_soft);
  }
}

void check_names(const StatementList& body, bool soft) {
  for (const auto& statement : body) {
    bool is_if = statement->kind == Statement::Kind::If;
    bool is_inner_frame = statement->kind == Statement::Kind::For ||
                          statement->kind == Statement::Kind::Macro ||
                          statement->kind == Statement::Kind::CallBlock;
    check_names(statement->expression.get(), soft);
    check_names(statement->filter.get(), soft);
    check_names(statement->condition.get(), (soft || is_if) && !is_inner_frame);
    for (const auto& parameter : statement->parameters) {
      check_names(parameter.default_value.get(), false);
    }
    bool body_soft = is_inner_frame ? false : soft || is_if;
    check_names(statement->body, body_soft);
    check_names(statement->else_body, body_soft);
  }
}

}  // namespace

TemplateTree parse_template(const std::string& source) {
  TemplateTree tree = Parser(tokenize_template(source)).parse();
  check_names(tree.body, false);
  return tree;
}

}  // namespace mlx_cpp::jinja
