#include "template/interpreter.h"

#include <algorithm>

#include "template/builtins.h"
#include "template/template_error.h"
#include "template/value_operations.h"

namespace mlx_cpp::jinja {

const Value* Frame::lookup(const std::string& name) const {
  for (const Frame* frame = this; frame; frame = frame->parent.get()) {
    for (const auto& [key, value] : frame->variables) {
      if (key == name) return &value;
    }
  }
  return nullptr;
}

void Frame::assign(const std::string& name, Value value) {
  for (auto& [key, existing] : variables) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  variables.emplace_back(name, std::move(value));
}

namespace {

std::shared_ptr<Frame> child_frame(const std::shared_ptr<Frame>& parent) {
  auto frame = std::make_shared<Frame>();
  frame->parent = parent;
  return frame;
}

// Binds `value` to one name, or unpacks it over several as Python does.
void bind_targets(Frame& frame, const std::vector<std::string>& targets, const Value& value) {
  if (targets.size() == 1) {
    frame.assign(targets[0], value);
    return;
  }
  std::vector<Value> items = iterate_values(value);
  if (items.size() != targets.size()) {
    throw TemplateFailure("cannot unpack " + std::to_string(items.size()) + " values into " +
                          std::to_string(targets.size()) + " names");
  }
  for (size_t i = 0; i < targets.size(); ++i) frame.assign(targets[i], items[i]);
}

// Whether a macro body reads `name` (jinja2 accepts extra arguments only
// when the body uses varargs / kwargs).
bool expression_reads(const Expression* expression, const std::string& name) {
  if (!expression) return false;
  if (expression->kind == Expression::Kind::Name && expression->name == name) return true;
  for (const auto& operand : expression->operands) {
    if (expression_reads(operand.get(), name)) return true;
  }
  for (const auto& [key, argument] : expression->keyword_arguments) {
    if (expression_reads(argument.get(), name)) return true;
  }
  return false;
}

bool body_reads(const StatementList& body, const std::string& name) {
  for (const auto& statement : body) {
    if (expression_reads(statement->expression.get(), name) ||
        expression_reads(statement->condition.get(), name) ||
        expression_reads(statement->filter.get(), name) || body_reads(statement->body, name) ||
        body_reads(statement->else_body, name)) {
      return true;
    }
    for (const auto& parameter : statement->parameters) {
      if (expression_reads(parameter.default_value.get(), name)) return true;
    }
  }
  return false;
}

Value make_loop_object(const std::vector<Value>& items, size_t index) {
  Value loop = Value::dict();
  auto& dict = loop.as_dict();
  // The interpreter's own bookkeeping: fresh keys, so no search for an
  // existing one, and not charged to the template's budget (one per
  // iteration, gone with it).
  auto add = [&dict](const char* key, Value value) {
    dict.depth = std::max(dict.depth, value.depth() + 1);
    dict.entries.emplace_back(Value(key), std::move(value));
  };
  auto length = static_cast<int64_t>(items.size());
  auto position = static_cast<int64_t>(index);
  add("index", Value(position + 1));
  add("index0", Value(position));
  add("revindex", Value(length - position));
  add("revindex0", Value(length - position - 1));
  add("first", Value(index == 0));
  add("last", Value(position == length - 1));
  add("length", Value(length));
  add("depth", Value(1));
  add("depth0", Value(0));
  add("previtem", index > 0 ? items[index - 1] : Value::undefined("there is no previous item"));
  add("nextitem",
      index + 1 < items.size() ? items[index + 1] : Value::undefined("there is no next item"));
  add("cycle", Value::function("loop.cycle", [index](const CallArguments& arguments) {
        if (arguments.positional.empty()) throw TemplateFailure("no items for cycling given");
        return arguments.positional[index % arguments.positional.size()];
      }));
  return loop;
}

}  // namespace

Interpreter::Interpreter(const TemplateTree& tree, std::shared_ptr<Frame> globals,
                         TemplateLimits limits)
    : tree_(tree), globals_(std::move(globals)), limits_(limits), budget_(limits) {}

std::string Interpreter::render() {
  RenderBudget::Scope scope(budget_);
  std::string out;
  auto root = child_frame(globals_);
  execute(tree_.body, root, out);
  return out;
}

void Interpreter::write(std::string& out, const std::string& text) {
  output_bytes_ += text.size();
  if (output_bytes_ > limits_.max_output_bytes) {
    throw TemplateFailure("output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  out += text;
}

Interpreter::Flow Interpreter::execute(const StatementList& body,
                                       const std::shared_ptr<Frame>& frame, std::string& out) {
  for (const auto& statement : body) {
    Flow flow;
    try {
      RenderBudget::Level level(budget_);
      flow = execute_statement(*statement, frame, out);
    } catch (const TemplateFailure& failure) {
      throw_template_error(statement->line, failure.what());
    }
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::execute_statement(const Statement& statement,
                                                 const std::shared_ptr<Frame>& frame,
                                                 std::string& out) {
  using Kind = Statement::Kind;
  switch (statement.kind) {
    case Kind::Text:
      write(out, statement.text);
      return Flow::Normal;
    case Kind::Output:
      write(out, evaluate(*statement.expression, frame).to_output());
      return Flow::Normal;
    case Kind::If:
      return execute(
          evaluate(*statement.condition, frame).truthy() ? statement.body : statement.else_body,
          frame, out);
    case Kind::For:
      return execute_for(statement, frame, out);
    case Kind::Set:
    case Kind::SetBlock:
      execute_set(statement, frame, out);
      return Flow::Normal;
    case Kind::Macro:
      frame->assign(statement.name, define_macro(statement, frame));
      return Flow::Normal;
    case Kind::CallBlock:
      execute_call_block(statement, frame, out);
      return Flow::Normal;
    case Kind::FilterBlock: {
      Value text(render_captured(statement.body, frame));
      write(out, apply_filter_chain(*statement.filter, text, frame).to_output());
      return Flow::Normal;
    }
    case Kind::Break:
      return Flow::Break;
    case Kind::Continue:
      return Flow::Continue;
    case Kind::Scope:
      return execute(statement.body, frame, out);
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::execute_for(const Statement& statement,
                                           const std::shared_ptr<Frame>& frame, std::string& out) {
  std::vector<Value> all_items = iterate_values(evaluate(*statement.expression, frame));
  std::vector<Value> items;
  if (statement.condition) {
    for (const auto& item : all_items) {
      auto scope = child_frame(frame);
      bind_targets(*scope, statement.targets, item);
      if (evaluate(*statement.condition, scope).truthy()) items.push_back(item);
    }
  } else {
    items = std::move(all_items);
  }
  if (items.empty()) return execute(statement.else_body, frame, out);
  for (size_t index = 0; index < items.size(); ++index) {
    if (++loop_iterations_ > limits_.max_loop_iterations) {
      throw TemplateFailure("more than " + std::to_string(limits_.max_loop_iterations) +
                            " loop iterations");
    }
    auto scope = child_frame(frame);
    scope->assign("loop", make_loop_object(items, index));
    bind_targets(*scope, statement.targets, items[index]);
    if (execute(statement.body, scope, out) == Flow::Break) break;
  }
  return Flow::Normal;
}

void Interpreter::execute_set(const Statement& statement, const std::shared_ptr<Frame>& frame,
                              std::string& out) {
  (void)out;
  if (statement.kind == Statement::Kind::SetBlock) {
    Value text(render_captured(statement.body, frame));
    if (statement.filter) text = apply_filter_chain(*statement.filter, text, frame);
    bind_targets(*frame, statement.targets, text);
    return;
  }
  Value value = evaluate(*statement.expression, frame);
  if (statement.attribute.empty()) {
    bind_targets(*frame, statement.targets, value);
    return;
  }
  const Value* target = frame->lookup(statement.name);
  if (!target || !target->is_namespace()) {
    throw TemplateFailure("can only assign attributes on namespace objects, '" + statement.name +
                          "' is not one");
  }
  if (!statement.attribute.empty() && statement.attribute[0] == '_') {
    throw TemplateFailure("cannot store underscore-prefixed attribute '" + statement.attribute +
                          "' on a namespace");
  }
  target->as_dict().set(Value(statement.attribute), value);
}

std::string Interpreter::render_captured(const StatementList& body,
                                         const std::shared_ptr<Frame>& frame) {
  std::string captured;
  execute(body, frame, captured);
  return captured;
}

Value Interpreter::define_macro(const Statement& statement, const std::shared_ptr<Frame>& frame) {
  // The frame is held weakly: the macro usually lives in that same frame,
  // and a strong reference would make a cycle.
  std::weak_ptr<Frame> defining_frame = frame;
  const Statement* definition = &statement;
  return Value::function(
      statement.name, [this, definition, defining_frame](const CallArguments& arguments) {
        auto frame = defining_frame.lock();
        if (!frame) throw TemplateFailure("macro '" + definition->name + "' outlived its scope");
        return call_macro(*definition, frame, arguments);
      });
}

Value Interpreter::call_macro(const Statement& statement,
                              const std::shared_ptr<Frame>& defining_frame,
                              const CallArguments& arguments) {
  if (call_depth_ >= limits_.max_call_depth) {
    throw TemplateFailure("macro calls nested deeper than " +
                          std::to_string(limits_.max_call_depth));
  }
  auto scope = child_frame(defining_frame);
  const auto& parameters = statement.parameters;
  bool takes_varargs = body_reads(statement.body, "varargs");
  bool takes_kwargs = body_reads(statement.body, "kwargs");
  if (arguments.positional.size() > parameters.size() && !takes_varargs) {
    throw TemplateFailure("macro '" + statement.name + "' takes not more than " +
                          std::to_string(parameters.size()) + " argument(s)");
  }
  std::vector<Value> extra_positional;
  for (size_t i = parameters.size(); i < arguments.positional.size(); ++i) {
    extra_positional.push_back(arguments.positional[i]);
  }
  Value extra_keywords = Value::dict();
  for (const auto& [name, value] : arguments.keyword) {
    bool known = name == "caller";
    for (const auto& parameter : parameters) known = known || parameter.name == name;
    if (known) continue;
    if (!takes_kwargs) {
      throw TemplateFailure("macro '" + statement.name + "' takes no keyword argument '" + name +
                            "'");
    }
    extra_keywords.as_dict().set(Value(name), value);
  }
  ++call_depth_;
  struct DepthGuard {
    int& depth;
    ~DepthGuard() { --depth; }
  } guard{call_depth_};
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Value* given = arguments.get(i, parameters[i].name);
    Value value = given ? *given
                  : parameters[i].default_value
                      ? evaluate(*parameters[i].default_value, scope)
                      : Value::undefined("parameter '" + parameters[i].name + "' was not provided");
    scope->assign(parameters[i].name, value);
  }
  scope->assign("varargs", Value::list(extra_positional, true));
  scope->assign("kwargs", extra_keywords);
  if (const Value* caller = arguments.get(SIZE_MAX, "caller")) scope->assign("caller", *caller);
  return Value(render_captured(statement.body, scope));
}

void Interpreter::execute_call_block(const Statement& statement,
                                     const std::shared_ptr<Frame>& frame, std::string& out) {
  // caller() renders the block body like a macro defined here.
  Value caller = define_macro(statement, frame);
  const Expression& call = *statement.expression;
  Value callee = evaluate(*call.operands[0], frame);
  CallArguments arguments = evaluate_arguments(call, frame);
  arguments.keyword.emplace_back("caller", caller);
  if (!callee.is_function())
    throw TemplateFailure("'" + callee.type_name() + "' object is not callable");
  write(out, callee.as_function().call(arguments).to_output());
}

}  // namespace mlx_cpp::jinja
