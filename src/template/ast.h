#pragma once
// The syntax tree of a parsed template. Expressions and statements are each
// one node type with a kind; which fields a kind uses is listed beside it,
// which keeps the parser and the interpreter as two plain switch statements.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.h"

namespace mlx_cpp::jinja {

struct Expression;
using ExpressionPointer = std::unique_ptr<Expression>;

struct Expression {
  enum class Kind {
    Literal,       // literal
    Name,          // name
    ListLiteral,   // operands: items
    TupleLiteral,  // operands: items
    DictLiteral,   // operands: key0, value0, key1, value1, ...
    Attribute,     // operands[0].name
    Item,          // operands[0][operands[1]]
    Slice,         // operands[0][operands[1]:operands[2]:operands[3]] (null = omitted)
    Call,          // operands[0](operands[1..], keyword_arguments)
    Filter,        // operands[0] | name(operands[1..], keyword_arguments);
                   // operands[0] is null inside a {% filter %} block
    Test,          // operands[0] is [not] name(operands[1..]); negated
    Not,           // not operands[0]
    Negate,        // -operands[0]
    Plus,          // +operands[0]
    Binary,        // operands[0] name operands[1]; name: + - * / // % ** ~ and or
    Compare,       // operands[0] comparators[0] operands[1] comparators[1] ...
    Conditional,   // operands[0] if operands[1] else operands[2] (null: undefined)
  };

  Kind kind;
  int line;
  int height = 1;  // levels of this subtree; the parser bounds it
  std::string name;
  Value literal;
  bool negated = false;
  std::vector<ExpressionPointer> operands;
  std::vector<std::string> comparators;  // ==, !=, <, <=, >, >=, in, not in
  std::vector<std::pair<std::string, ExpressionPointer>> keyword_arguments;
};

struct Statement;
using StatementPointer = std::unique_ptr<Statement>;
using StatementList = std::vector<StatementPointer>;

// A macro's parameter; default_value is null when the parameter has none.
struct Parameter {
  std::string name;
  ExpressionPointer default_value;
};

struct Statement {
  enum class Kind {
    Text,         // text
    Output,       // {{ expression }}
    If,           // if expression: body, else: else_body (elif nests an If there)
    For,          // for targets in expression [if condition]: body, else: else_body
    Set,          // set targets = expression | set namespace_name.attribute = expression
    SetBlock,     // set targets [| filter]: body; filter is a Filter chain over null
    Macro,        // macro name(parameters): body
    CallBlock,    // call(parameters) expression: body, passed as caller()
    FilterBlock,  // filter: body through expression (a Filter chain over null)
    Break,
    Continue,
    Scope,  // body rendered as is ({% generation %} from transformers)
  };

  Kind kind;
  int line;
  std::string text;
  std::string name;
  ExpressionPointer expression;
  ExpressionPointer condition;
  ExpressionPointer filter;
  std::vector<std::string> targets;
  std::string attribute;  // set ns.attribute = ...
  std::vector<Parameter> parameters;
  StatementList body;
  StatementList else_body;
};

// A parsed template: its top-level statements.
struct TemplateTree {
  StatementList body;
};

}  // namespace mlx_cpp::jinja
