// Expression evaluation of the Interpreter (statements are in interpreter.cpp).
#include "template/builtins.h"
#include "template/interpreter.h"
#include "template/template_error.h"
#include "template/value_operations.h"

namespace mlx_cpp::jinja {
namespace {

std::optional<int64_t> slice_bound(const Value& value) {
  if (value.is_none() || value.is_undefined()) return std::nullopt;
  if (!value.is_integer() && !value.is_boolean()) {
    throw TemplateFailure("slice indices must be integers or None");
  }
  return value.as_integer();
}

bool compare(const std::string& op, const Value& left, const Value& right) {
  if (op == "==") return values_equal(left, right);
  if (op == "!=") return !values_equal(left, right);
  if (op == "in") return contains(right, left);
  if (op == "not in") return !contains(right, left);
  if (left.is_undefined()) raise_undefined(left);
  if (right.is_undefined()) raise_undefined(right);
  if (op == "<") return values_less(left, right);
  if (op == ">") return values_less(right, left);
  if (op == "<=") return !values_less(right, left);
  return !values_less(left, right);  // >=
}

}  // namespace

Value Interpreter::evaluate(const Expression& expression, const std::shared_ptr<Frame>& frame) {
  try {
    RenderBudget::Level level(budget_);
    return evaluate_node(expression, frame);
  } catch (const TemplateFailure& failure) {
    throw_template_error(expression.line, failure.what());
  }
}

Value Interpreter::evaluate_node(const Expression& expression,
                                 const std::shared_ptr<Frame>& frame) {
  using Kind = Expression::Kind;
  switch (expression.kind) {
    case Kind::Literal:
      return expression.literal;
    case Kind::Name: {
      const Value* value = frame->lookup(expression.name);
      return value ? *value : Value::undefined("'" + expression.name + "' is undefined");
    }
    case Kind::ListLiteral:
    case Kind::TupleLiteral:
    case Kind::DictLiteral:
      return evaluate_literal_container(expression, frame);
    case Kind::Attribute: {
      Value object = evaluate(*expression.operands[0], frame);
      if (object.is_undefined()) raise_undefined(object);
      return get_attribute(object, expression.name);
    }
    case Kind::Item:
      return get_item(evaluate(*expression.operands[0], frame),
                      evaluate(*expression.operands[1], frame));
    case Kind::Slice:
      return evaluate_slice(expression, frame);
    case Kind::Call:
      return evaluate_call(expression, frame);
    case Kind::Filter: {
      Value input = evaluate(*expression.operands[0], frame);
      return apply_filter(expression.name, input, evaluate_arguments(expression, frame));
    }
    case Kind::Test: {
      Value subject = evaluate(*expression.operands[0], frame);
      bool result = apply_test(expression.name, subject, evaluate_arguments(expression, frame));
      return Value(result != expression.negated);
    }
    case Kind::Not:
      return Value(!evaluate(*expression.operands[0], frame).truthy());
    case Kind::Negate:
    case Kind::Plus: {
      Value operand = evaluate(*expression.operands[0], frame);
      if (!operand.is_number()) {
        throw TemplateFailure("bad operand type for unary " +
                              std::string(expression.kind == Kind::Negate ? "-" : "+") + ": '" +
                              operand.type_name() + "'");
      }
      if (expression.kind == Kind::Plus)
        return operand.is_boolean() ? Value(operand.as_integer()) : operand;
      if (operand.is_float()) return Value(-operand.as_double());
      // 0 - x: checked, as -INT64_MIN does not fit.
      return arithmetic("-", Value(int64_t{0}), Value(operand.as_integer()));
    }
    case Kind::Binary:
      return evaluate_binary(expression, frame);
    case Kind::Compare:
      return evaluate_compare(expression, frame);
    case Kind::Conditional: {
      if (evaluate(*expression.operands[1], frame).truthy()) {
        return evaluate(*expression.operands[0], frame);
      }
      if (expression.operands[2]) return evaluate(*expression.operands[2], frame);
      return Value::undefined("the inline if-expression on line " +
                              std::to_string(expression.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value();
}

Value Interpreter::evaluate_literal_container(const Expression& expression,
                                              const std::shared_ptr<Frame>& frame) {
  if (expression.kind == Expression::Kind::DictLiteral) {
    Value dict = Value::dict();
    for (size_t i = 0; i + 1 < expression.operands.size(); i += 2) {
      Value key = evaluate(*expression.operands[i], frame);
      if (key.is_list() && !key.is_tuple()) throw TemplateFailure("unhashable type: 'list'");
      if (key.is_dict()) throw TemplateFailure("unhashable type: 'dict'");
      dict.as_dict().set(key, evaluate(*expression.operands[i + 1], frame));
    }
    return dict;
  }
  std::vector<Value> items;
  for (const auto& operand : expression.operands) items.push_back(evaluate(*operand, frame));
  return Value::list(std::move(items), expression.kind == Expression::Kind::TupleLiteral);
}

Value Interpreter::evaluate_binary(const Expression& expression,
                                   const std::shared_ptr<Frame>& frame) {
  const std::string& op = expression.name;
  Value left = evaluate(*expression.operands[0], frame);
  if (op == "and") return left.truthy() ? evaluate(*expression.operands[1], frame) : left;
  if (op == "or") return left.truthy() ? left : evaluate(*expression.operands[1], frame);
  Value right = evaluate(*expression.operands[1], frame);
  if (op == "~") {
    std::string text = left.to_output();
    const std::string right_text = right.to_output();
    ensure_room_for(text.size() + right_text.size());
    return Value(text + right_text);
  }
  return arithmetic(op, left, right);
}

Value Interpreter::evaluate_compare(const Expression& expression,
                                    const std::shared_ptr<Frame>& frame) {
  Value left = evaluate(*expression.operands[0], frame);
  for (size_t i = 0; i < expression.comparators.size(); ++i) {
    Value right = evaluate(*expression.operands[i + 1], frame);
    if (!compare(expression.comparators[i], left, right)) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Interpreter::evaluate_slice(const Expression& expression,
                                  const std::shared_ptr<Frame>& frame) {
  Value object = evaluate(*expression.operands[0], frame);
  std::optional<int64_t> bounds[3];
  for (size_t i = 0; i < 3; ++i) {
    if (expression.operands[i + 1]) {
      bounds[i] = slice_bound(evaluate(*expression.operands[i + 1], frame));
    }
  }
  return slice_value(object, bounds[0], bounds[1], bounds[2]);
}

CallArguments Interpreter::evaluate_arguments(const Expression& expression,
                                              const std::shared_ptr<Frame>& frame) {
  CallArguments arguments;
  for (size_t i = 1; i < expression.operands.size(); ++i) {
    arguments.positional.push_back(evaluate(*expression.operands[i], frame));
  }
  for (const auto& [name, argument] : expression.keyword_arguments) {
    arguments.keyword.emplace_back(name, evaluate(*argument, frame));
  }
  return arguments;
}

Value Interpreter::evaluate_call(const Expression& expression,
                                 const std::shared_ptr<Frame>& frame) {
  Value callee = evaluate(*expression.operands[0], frame);
  if (callee.is_undefined()) raise_undefined(callee);
  if (!callee.is_function()) {
    throw TemplateFailure("'" + callee.type_name() + "' object is not callable");
  }
  return callee.as_function().call(evaluate_arguments(expression, frame));
}

Value Interpreter::apply_filter_chain(const Expression& filter, const Value& input,
                                      const std::shared_ptr<Frame>& frame) {
  const Expression* inner = filter.operands[0].get();
  Value value = inner ? apply_filter_chain(*inner, input, frame) : input;
  return apply_filter(filter.name, value, evaluate_arguments(filter, frame));
}

}  // namespace mlx_cpp::jinja
