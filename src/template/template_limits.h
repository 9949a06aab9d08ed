#pragma once
// What one render of a template may spend. Chat templates come with model
// files from strangers and their inputs with requests, so the interpreter
// enforces every bound as it runs: a template that would exhaust the stack,
// the memory or the time of the process fails with a one-line error instead.
#include <cstddef>

namespace mlx_cpp {

struct TemplateLimits {
  int max_call_depth = 200;  // nested macro / caller() calls
  // Statements and expressions being evaluated inside one another at once
  // (macro calls included), so deep recursion ends before the stack does.
  int max_nesting = 1000;
  size_t max_output_bytes = 64u << 20;    // text produced, captured or not
  size_t max_loop_iterations = 1u << 24;  // all loop iterations together
  size_t max_steps = 1u << 25;            // expressions evaluated + statements run
  // Bytes of the strings and lists a render builds, all together, charged
  // before the big ones are built; bounds memory and copying time.
  size_t max_built_bytes = 256u << 20;
  double max_seconds = 10.0;  // wall time, checked every few thousand steps
};

}  // namespace mlx_cpp
