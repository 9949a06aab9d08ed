#pragma once
// Errors the HTTP layer answers with an OpenAI-style body:
//   {"error": {"message", "type", "param", "code"}}
// ApiError carries the HTTP status; mlx_cpp::Error (a user mistake found
// deeper down, e.g. an out-of-range sampler option) maps to 400 and anything
// else to 500 in one place: error_response_for().
#include <exception>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace mlx_cpp::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::string param = {},
           std::string code = {})
      : std::runtime_error(message),
        status_(status),
        type_(std::move(type)),
        param_(std::move(param)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string type_;
  std::string param_;
  std::string code_;
};

// 400 invalid_request_error naming the offending field.
ApiError invalid_request(const std::string& message, const std::string& param = {});

struct ErrorResponse {
  int status = 500;
  nlohmann::ordered_json body;
};

nlohmann::ordered_json error_body(const std::string& message, const std::string& type,
                                  const std::string& param = {}, const std::string& code = {});
ErrorResponse error_response(const ApiError& error);
// The one mapping from exceptions to responses: ApiError keeps its status,
// mlx_cpp::Error and nlohmann type errors are 400, everything else is 500.
ErrorResponse error_response_for(const std::exception_ptr& error);

}  // namespace mlx_cpp::server
