#pragma once
// The JSON objects of OpenAI's two completion APIs, streamed (chunks) and
// whole. One interface so the handler that drives a task is shared: the
// chat shape puts text in choices[0].delta / .message, the completions
// shape in choices[0].text, and each writes logprobs its API's way.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/session.h"

namespace mlx_cpp::server {

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;
  // Speculative decoding's drafts (OpenAI's predicted-output fields),
  // reported when the request speculated.
  bool speculative = false;
  int accepted_prediction_tokens = 0, rejected_prediction_tokens = 0;
};

nlohmann::ordered_json usage_json(const Usage& usage);
// OpenAI's finish reasons; a generation cancelled by the server (shutdown)
// is reported as "cancelled".
std::string finish_reason_of(const TextResult& result);

class ResponseShape {
 public:
  virtual ~ResponseShape() = default;
  // The chunk opening a stream (chat: the assistant role), or null.
  virtual nlohmann::ordered_json opening_chunk() const = 0;
  virtual nlohmann::ordered_json text_chunk(const TextChunk& chunk) const = 0;
  virtual nlohmann::ordered_json final_chunk(const std::string& finish_reason) const = 0;
  nlohmann::ordered_json usage_chunk(const Usage& usage) const;
  // A whole (non-streamed) response from every chunk of the generation.
  virtual nlohmann::ordered_json whole_response(const std::vector<TextChunk>& chunks,
                                                const TextResult& result,
                                                const Usage& usage) const = 0;

 protected:
  ResponseShape(std::string id, std::string object, std::string model, bool logprobs);
  nlohmann::ordered_json envelope(const std::string& object) const;
  std::string id_;
  std::string chunk_object_;
  std::string model_;
  long long created_;
  bool logprobs_;
};

std::unique_ptr<ResponseShape> make_chat_shape(const std::string& model, bool logprobs);
std::unique_ptr<ResponseShape> make_completion_shape(const std::string& model, bool logprobs);

}  // namespace mlx_cpp::server
