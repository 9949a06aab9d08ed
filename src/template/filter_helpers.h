#pragma once
// Argument helpers shared by the filter, test and method implementations.
#include <string>

#include "template/template_error.h"
#include "template/value.h"

namespace mlx_cpp::jinja {

// The argument at `position` or named `name`, else `fallback`.
Value optional_argument(const CallArguments& arguments, size_t position, const std::string& name,
                        Value fallback);
// Same, but throws naming `function` when the argument is missing.
Value required_argument(const CallArguments& arguments, size_t position, const std::string& name,
                        const std::string& function);

// `attribute` may be dotted ("function.name"); integer parts index lists.
Value get_attribute_path(const Value& object, const std::string& attribute);

bool is_sequence_filter(const std::string& name);
Value apply_sequence_filter(const std::string& name, const Value& input,
                            const CallArguments& arguments);

}  // namespace mlx_cpp::jinja
