#pragma once
// Parses a token stream into a TemplateTree, with jinja2's grammar and
// operator precedence. Unknown filters and tests are rejected here, at parse
// time, as jinja2 rejects them when it compiles a template.
#include <string>

#include "template/ast.h"

namespace mlx_cpp::jinja {

// Throws mlx_cpp::Error "template error at line N: ..." on a syntax error.
TemplateTree parse_template(const std::string& source);

}  // namespace mlx_cpp::jinja
