#pragma once
// Two stages of a template problem: TemplateFailure is thrown by code that
// does not know the template line (filters, methods, value operations); the
// interpreter catches it and rethrows mlx_cpp::Error naming the line of the
// node it was evaluating. Lexer and parser know the line and throw directly.
#include <stdexcept>
#include <string>

#include "io/error.h"

// GCC 12 reports false -Wrestrict positives for `"text" + std::string`
// (GCC bug 105651), a pattern every error message here uses.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace mlx_cpp::jinja {

class TemplateFailure : public std::runtime_error {
 public:
  explicit TemplateFailure(const std::string& message) : std::runtime_error(message) {}
};

[[noreturn]] inline void throw_template_error(int line, const std::string& message) {
  throw mlx_cpp::Error("template error at line " + std::to_string(line) + ": " + message);
}

}  // namespace mlx_cpp::jinja
