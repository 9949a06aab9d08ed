#include "server/embeddings_request.h"

#include <bit>
#include <cstdint>
#include <cstring>

#include "server/api_error.h"
#include "server/request_fields.h"

namespace mlx_cpp::server {
namespace {

std::vector<int> token_ids(const nlohmann::ordered_json& list) {
  std::vector<int> ids;
  for (const auto& id : list) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      throw invalid_request("token ids in 'input' must be non-negative integers", "input");
    ids.push_back(static_cast<int>(id.get<int64_t>()));
  }
  if (ids.empty()) throw invalid_request("an input in 'input' is empty", "input");
  return ids;
}

}  // namespace

EmbeddingsRequest parse_embeddings_request(const nlohmann::ordered_json& body,
                                           int embedding_dimension) {
  EmbeddingsRequest request;
  optional_string(body, "model");  // any name is served by the one model (docs/server.md)
  optional_string(body, "user");
  const auto input = body.find("input");
  if (input == body.end() || input->is_null())
    throw invalid_request("'input' is required", "input");
  if (input->is_string()) {
    request.inputs.emplace_back(input->get<std::string>());
  } else if (input->is_array() && !input->empty() && (*input)[0].is_number_integer()) {
    request.inputs.emplace_back(token_ids(*input));
  } else if (input->is_array()) {
    for (const auto& item : *input) {
      if (item.is_string())
        request.inputs.emplace_back(item.get<std::string>());
      else if (item.is_array())
        request.inputs.emplace_back(token_ids(item));
      else
        throw invalid_request(
            "'input' must be a string, a list of strings, a list of token ids or a list of "
            "such lists",
            "input");
    }
  } else {
    throw invalid_request("'input' must be a string or a list", "input");
  }
  if (request.inputs.empty()) throw invalid_request("'input' is empty", "input");
  if (request.inputs.size() > kMaxEmbeddingInputs)
    throw invalid_request("'input' holds " + std::to_string(request.inputs.size()) +
                              " inputs, more than " + std::to_string(kMaxEmbeddingInputs),
                          "input");
  for (const auto& item : request.inputs)
    if (const auto* text = std::get_if<std::string>(&item); text && text->empty())
      throw invalid_request("an input in 'input' is an empty string", "input");
  const auto format = optional_string(body, "encoding_format").value_or("float");
  if (format != "float" && format != "base64")
    throw invalid_request("'encoding_format' must be float or base64", "encoding_format");
  request.base64 = format == "base64";
  if (auto dimensions = optional_integer(body, "dimensions", 1, embedding_dimension))
    request.dimensions = static_cast<int>(*dimensions);
  request.prompt_name = optional_string(body, "prompt_name").value_or("");
  return request;
}

std::string embedding_as_base64(const std::vector<float>& values) {
  static_assert(std::endian::native == std::endian::little, "float32 bytes are written as held");
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t left = bytes.size() - i;
    uint32_t chunk = static_cast<uint8_t>(bytes[i]) << 16;
    if (left > 1) chunk |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (left > 2) chunk |= static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(chunk >> 18) & 63];
    out += kAlphabet[(chunk >> 12) & 63];
    out += left > 1 ? kAlphabet[(chunk >> 6) & 63] : '=';
    out += left > 2 ? kAlphabet[chunk & 63] : '=';
  }
  return out;
}

}  // namespace mlx_cpp::server
