#pragma once
// The one exception type for problems a user can fix (bad files, bad
// arguments, unsupported models). Its message is a single line that names
// the operation and the offending values; front ends print it and exit
// non-zero (CLI) or map it to HTTP 400 (server).
#include <stdexcept>
#include <string>

namespace mlx_cpp {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A request or model that does not fit the memory budget (the server
// answers 400 with type "memory_admission").
class MemoryAdmissionError : public Error {
 public:
  using Error::Error;
};

}  // namespace mlx_cpp
