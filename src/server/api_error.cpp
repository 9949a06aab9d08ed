#include "server/api_error.h"

#include "io/error.h"

namespace mlx_cpp::server {

ApiError invalid_request(const std::string& message, const std::string& param) {
  return ApiError(400, "invalid_request_error", message, param);
}

nlohmann::ordered_json error_body(const std::string& message, const std::string& type,
                                  const std::string& param, const std::string& code) {
  auto null_if_empty = [](const std::string& text) {
    return text.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(text);
  };
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", null_if_empty(param)},
            {"code", null_if_empty(code)}}}};
}

ErrorResponse error_response(const ApiError& error) {
  return {error.status(), error_body(error.what(), error.type(), error.param(), error.code())};
}

ErrorResponse error_response_for(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const ApiError& api_error) {
    return error_response(api_error);
  } catch (const mlx_cpp::MemoryAdmissionError& admission) {
    return {400, error_body(admission.what(), "memory_admission")};
  } catch (const mlx_cpp::Error& user_error) {
    return {400, error_body(user_error.what(), "invalid_request_error")};
  } catch (const nlohmann::ordered_json::exception& json_error) {
    return {400, error_body(json_error.what(), "invalid_request_error")};
  } catch (const std::exception& fault) {
    return {500, error_body(fault.what(), "server_error")};
  } catch (...) {
    return {500, error_body("unknown internal error", "server_error")};
  }
}

}  // namespace mlx_cpp::server
