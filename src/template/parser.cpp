#include "template/parser.h"

#include <algorithm>

#include "template/builtins.h"
#include "template/expression_parser.h"
#include "template/lexer.h"
#include "template/template_error.h"
#include "template/token_cursor.h"

namespace mlx_cpp::jinja {
namespace {

using Kind = Expression::Kind;

StatementPointer make_statement(Statement::Kind kind, int line) {
  auto statement = std::make_unique<Statement>();
  statement->kind = kind;
  statement->line = line;
  return statement;
}

// Statements: {% if %}, {% for %}, {% set %}, {% macro %}, ... and the text
// and {{ output }} between them.
class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)), expressions_(tokens_) {}

  TemplateTree parse() {
    TemplateTree tree;
    std::string found;
    tree.body = parse_statements({}, found);
    return tree;
  }

 private:
  // Parses until a block tag whose name is in `terminators`; consumes "{%"
  // and that name and reports it in `found`.
  StatementList parse_statements(const std::vector<std::string>& terminators, std::string& found) {
    StatementList body;
    while (true) {
      const Token& token = tokens_.current();
      if (token.kind == TokenKind::EndOfInput) {
        if (!terminators.empty()) {
          tokens_.fail("unexpected end of template, expected '" + terminators.back() + "'");
        }
        return body;
      }
      if (token.kind == TokenKind::Text) {
        auto text = make_statement(Statement::Kind::Text, token.line);
        text->text = token.text;
        body.push_back(std::move(text));
        tokens_.advance();
      } else if (token.kind == TokenKind::VariableBegin) {
        auto output = make_statement(Statement::Kind::Output, token.line);
        tokens_.advance();
        output->expression = expressions_.parse_tuple(true);
        tokens_.expect(TokenKind::VariableEnd, "end of print statement");
        body.push_back(std::move(output));
      } else if (token.kind == TokenKind::BlockBegin) {
        const Token& name = tokens_.peek();
        if (name.kind == TokenKind::Name &&
            std::find(terminators.begin(), terminators.end(), name.text) != terminators.end()) {
          tokens_.advance();
          found = tokens_.advance().text;
          return body;
        }
        tokens_.advance();
        body.push_back(parse_block_statement());
      } else {
        tokens_.fail("unexpected " + describe_token(token));
      }
    }
  }

  StatementPointer parse_block_statement() {
    TokenCursor::NestingGuard guard(tokens_);
    const Token& token = tokens_.current();
    if (token.kind != TokenKind::Name)
      tokens_.fail("expected a statement name, got " + describe_token(token));
    std::string name = tokens_.advance().text;
    int line = token.line;
    if (name == "if") return parse_if(line);
    if (name == "for") return parse_for(line);
    if (name == "set") return parse_set(line);
    if (name == "macro") return parse_macro(line);
    if (name == "call") return parse_call_block(line);
    if (name == "filter") return parse_filter_block(line);
    if (name == "generation") return parse_scope(line, "endgeneration");
    if (name == "break" || name == "continue") {
      tokens_.expect(TokenKind::BlockEnd, "end of statement block");
      return make_statement(name == "break" ? Statement::Kind::Break : Statement::Kind::Continue,
                            line);
    }
    throw_template_error(line, "unknown or unsupported tag '" + name + "'");
  }

  // Parses a body up to `end_name` and the end of that closing tag.
  StatementList parse_body_until(const char* end_name) {
    std::string found;
    StatementList body = parse_statements({end_name}, found);
    tokens_.expect(TokenKind::BlockEnd, "end of statement block");
    return body;
  }

  StatementPointer parse_if(int line) {
    TokenCursor::NestingGuard guard(tokens_);  // each elif nests one more If
    auto statement = make_statement(Statement::Kind::If, line);
    statement->condition = expressions_.parse_tuple(false);
    tokens_.expect(TokenKind::BlockEnd, "end of statement block");
    std::string found;
    statement->body = parse_statements({"elif", "else", "endif"}, found);
    if (found == "elif") {
      statement->else_body.push_back(parse_if(tokens_.current().line));
      return statement;
    }
    tokens_.expect(TokenKind::BlockEnd, "end of statement block");
    if (found == "else") statement->else_body = parse_body_until("endif");
    return statement;
  }

  std::vector<std::string> parse_assign_targets() {
    std::vector<std::string> targets;
    bool parenthesized = tokens_.skip_operator("(");
    do {
      if (!targets.empty() && tokens_.current().kind != TokenKind::Name) break;  // trailing comma
      targets.push_back(tokens_.expect_name());
    } while (tokens_.skip_operator(","));
    if (parenthesized) tokens_.expect_operator(")");
    return targets;
  }

  StatementPointer parse_for(int line) {
    auto statement = make_statement(Statement::Kind::For, line);
    statement->targets = parse_assign_targets();
    if (!tokens_.skip_name("in"))
      tokens_.fail("expected 'in' in for loop, got " + describe_token(tokens_.current()));
    statement->expression = expressions_.parse_tuple(false);
    if (tokens_.skip_name("if")) statement->condition = expressions_.parse_expression(true);
    if (tokens_.at_name("recursive")) tokens_.fail("recursive for loops are not supported");
    tokens_.expect(TokenKind::BlockEnd, "end of statement block");
    std::string found;
    statement->body = parse_statements({"else", "endfor"}, found);
    tokens_.expect(TokenKind::BlockEnd, "end of statement block");
    if (found == "else") statement->else_body = parse_body_until("endfor");
    return statement;
  }

  StatementPointer parse_set(int line) {
    if (tokens_.current().kind == TokenKind::Name && tokens_.peek().kind == TokenKind::Operator &&
        tokens_.peek().text == ".") {
      auto statement = make_statement(Statement::Kind::Set, line);
      statement->name = tokens_.advance().text;
      tokens_.advance();
      statement->attribute = tokens_.expect_name();
      tokens_.expect_operator("=");
      statement->expression = expressions_.parse_tuple(true);
      tokens_.expect(TokenKind::BlockEnd, "end of statement block");
      return statement;
    }
    std::vector<std::string> targets = parse_assign_targets();
    if (tokens_.skip_operator("=")) {
      auto statement = make_statement(Statement::Kind::Set, line);
      statement->targets = std::move(targets);
      statement->expression = expressions_.parse_tuple(true);
      tokens_.expect(TokenKind::BlockEnd, "end of statement block");
      return statement;
    }
    auto statement = make_statement(Statement::Kind::SetBlock, line);
    statement->targets = std::move(targets);
    if (tokens_.at_operator("|")) statement->filter = expressions_.parse_filters(nullptr);
    tokens_.expect(TokenKind::BlockEnd, "end of statement block");
    statement->body = parse_body_until("endset");
    return statement;
  }

  std::vector<Parameter> parse_parameters() {
    std::vector<Parameter> parameters;
    tokens_.expect_operator("(");
    while (!tokens_.skip_operator(")")) {
      if (!parameters.empty()) tokens_.expect_operator(",");
      if (tokens_.skip_operator(")")) break;
      Parameter parameter;
      parameter.name = tokens_.expect_name();
      if (tokens_.skip_operator("=")) parameter.default_value = expressions_.parse_expression(true);
      parameters.push_back(std::move(parameter));
    }
    return parameters;
  }

  StatementPointer parse_macro(int line) {
    auto statement = make_statement(Statement::Kind::Macro, line);
    statement->name = tokens_.expect_name();
    statement->parameters = parse_parameters();
    tokens_.expect(TokenKind::BlockEnd, "end of statement block");
    statement->body = parse_body_until("endmacro");
    return statement;
  }

  StatementPointer parse_call_block(int line) {
    auto statement = make_statement(Statement::Kind::CallBlock, line);
    if (tokens_.at_operator("(")) statement->parameters = parse_parameters();
    statement->expression = expressions_.parse_expression(true);
    if (statement->expression->kind != Kind::Call) tokens_.fail("expected a call in {% call %}");
    tokens_.expect(TokenKind::BlockEnd, "end of statement block");
    statement->body = parse_body_until("endcall");
    return statement;
  }

  StatementPointer parse_filter_block(int line) {
    auto statement = make_statement(Statement::Kind::FilterBlock, line);
    statement->filter = expressions_.parse_filter_chain(nullptr);
    tokens_.expect(TokenKind::BlockEnd, "end of statement block");
    statement->body = parse_body_until("endfilter");
    return statement;
  }

  StatementPointer parse_scope(int line, const char* end_name) {
    auto statement = make_statement(Statement::Kind::Scope, line);
    tokens_.expect(TokenKind::BlockEnd, "end of statement block");
    statement->body = parse_body_until(end_name);
    return statement;
  }

  TokenCursor tokens_;
  ExpressionParser expressions_;
};

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
