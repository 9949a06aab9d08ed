// Request bodies, as HTTP clients send them, through every API's parser
// (chat and text completions, Anthropic's Messages, OpenAI's Responses,
// embeddings): a parser may refuse a body only with an ApiError or an
// mlx_cpp::Error (answered as a 4xx), never with another exception, a
// crash or undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "io/error.h"
#include "server/anthropic_request.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/embeddings_request.h"
#include "server/request_fields.h"
#include "server/responses_request.h"
#include "server/responses_store.h"

namespace {

using mlx_cpp::server::ApiError;

template <class Parse>
void refused_cleanly(Parse&& parse) {
  try {
    parse();
  } catch (const ApiError&) {
  } catch (const mlx_cpp::Error&) {
  } catch (...) {
    std::abort();  // any other failure would be a 500, or worse
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace server = mlx_cpp::server;
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::ordered_json body;
  try {
    body = server::parse_json_body(text);
  } catch (const ApiError&) {
    return 0;  // malformed JSON, a non-object or nesting too deep: a 400
  } catch (...) {
    std::abort();
  }
  static const server::ModelInfo model{"model", 4096, 32000};
  static server::ResponsesStore store;
  refused_cleanly([&] { server::parse_chat_request(body, model); });
  refused_cleanly([&] { server::parse_completion_request(body, model); });
  refused_cleanly([&] {
    server::parse_anthropic_request(body, model, server::AnthropicRoute::messages);
  });
  refused_cleanly([&] {
    server::parse_anthropic_request(body, model, server::AnthropicRoute::count_tokens);
  });
  refused_cleanly([&] { server::parse_responses_request(body, model, store); });
  refused_cleanly([&] { server::parse_embeddings_request(body, 768); });
  return 0;
}
