#pragma once
// Python operators and protocols over template values: iteration, len(),
// subscripts and slices, arithmetic, `in`, and printf-style `%` formatting.
// Each throws TemplateFailure with Python's wording when types do not fit.
#include <optional>
#include <string>
#include <vector>

#include "template/template_error.h"
#include "template/value.h"

namespace mlx_cpp::jinja {

// Items of a list/tuple, keys of a dict, code points of a string; undefined
// iterates as empty (jinja2's Undefined); anything else throws.
std::vector<Value> iterate_values(const Value& value);
int64_t value_length(const Value& value);

// obj[key] as jinja2's sandbox resolves it: items first, then attributes.
// Missing entries give undefined.
Value get_item(const Value& object, const Value& key);
Value slice_value(const Value& object, const std::optional<int64_t>& start,
                  const std::optional<int64_t>& stop, const std::optional<int64_t>& step);

// op is one of + - * / // % **.
Value arithmetic(const std::string& op, const Value& left, const Value& right);
bool contains(const Value& container, const Value& item);
// Python's "fmt % args" for %s %r %d %i %f %x %% with flags, width, precision.
std::string percent_format(const std::string& format, const Value& arguments);

// An undefined value raises when used in ways jinja2's Undefined refuses.
[[noreturn]] void raise_undefined(const Value& undefined);

}  // namespace mlx_cpp::jinja
