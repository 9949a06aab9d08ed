#pragma once
// Renders a parsed template. Scoping follows jinja2: each for-loop iteration
// and each macro call gets its own frame, `if` blocks do not, and `set`
// writes to the innermost frame (so only namespace() objects carry values
// out of a loop).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/ast.h"
#include "template/render_budget.h"
#include "template/template_limits.h"

namespace mlx_cpp::jinja {

struct Frame {
  std::vector<std::pair<std::string, Value>> variables;
  std::shared_ptr<Frame> parent;

  const Value* lookup(const std::string& name) const;
  void assign(const std::string& name, Value value);
};

class Interpreter {
 public:
  Interpreter(const TemplateTree& tree, std::shared_ptr<Frame> globals, TemplateLimits limits);

  // Throws mlx_cpp::Error "template error at line N: ..." on any failure.
  std::string render();

 private:
  enum class Flow { Normal, Break, Continue };

  Flow execute(const StatementList& body, const std::shared_ptr<Frame>& frame, std::string& out);
  Flow execute_statement(const Statement& statement, const std::shared_ptr<Frame>& frame,
                         std::string& out);
  Flow execute_for(const Statement& statement, const std::shared_ptr<Frame>& frame,
                   std::string& out);
  void execute_set(const Statement& statement, const std::shared_ptr<Frame>& frame,
                   std::string& out);
  Value define_macro(const Statement& statement, const std::shared_ptr<Frame>& frame);
  Value call_macro(const Statement& statement, const std::shared_ptr<Frame>& defining_frame,
                   const CallArguments& arguments);
  void execute_call_block(const Statement& statement, const std::shared_ptr<Frame>& frame,
                          std::string& out);
  std::string render_captured(const StatementList& body, const std::shared_ptr<Frame>& frame);
  void write(std::string& out, const std::string& text);

  Value evaluate(const Expression& expression, const std::shared_ptr<Frame>& frame);
  Value evaluate_node(const Expression& expression, const std::shared_ptr<Frame>& frame);
  Value evaluate_binary(const Expression& expression, const std::shared_ptr<Frame>& frame);
  Value evaluate_compare(const Expression& expression, const std::shared_ptr<Frame>& frame);
  Value evaluate_call(const Expression& expression, const std::shared_ptr<Frame>& frame);
  Value evaluate_slice(const Expression& expression, const std::shared_ptr<Frame>& frame);
  Value evaluate_literal_container(const Expression& expression,
                                   const std::shared_ptr<Frame>& frame);
  CallArguments evaluate_arguments(const Expression& expression,
                                   const std::shared_ptr<Frame>& frame);
  // Applies a Filter chain whose innermost input is null to `input`.
  Value apply_filter_chain(const Expression& filter, const Value& input,
                           const std::shared_ptr<Frame>& frame);

  const TemplateTree& tree_;
  std::shared_ptr<Frame> globals_;
  TemplateLimits limits_;
  RenderBudget budget_;
  int call_depth_ = 0;
  size_t output_bytes_ = 0;
  size_t loop_iterations_ = 0;
};

}  // namespace mlx_cpp::jinja
