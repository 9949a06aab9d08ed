#pragma once
// The filters, tests, global functions and methods available to templates:
// jinja2's built-ins as transformers configures them (its own tojson,
// raise_exception, strftime_now; loop controls on).
#include <string>
#include <utility>
#include <vector>

#include "template/template_error.h"
#include "template/value.h"

namespace mlx_cpp::jinja {

bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);

// Applies filter `name` to `input`; throws TemplateFailure on bad input.
Value apply_filter(const std::string& name, const Value& input, const CallArguments& arguments);
bool apply_test(const std::string& name, const Value& input, const CallArguments& arguments);

// Attribute access `value.name` as jinja2's sandbox resolves it: dict keys
// first, then the bound methods of str, dict and list that templates use.
// Returns undefined for anything missing.
Value get_attribute(const Value& object, const std::string& name);

// range, dict, namespace, raise_exception, strftime_now, cycler, joiner.
void add_global_functions(std::vector<std::pair<std::string, Value>>& globals);

}  // namespace mlx_cpp::jinja
