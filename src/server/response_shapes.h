#pragma once
// The JSON objects of OpenAI's two completion APIs, streamed (chunks) and
// whole. One interface so the handler that drives a task is shared: the
// chat shape puts text in choices[0].delta / .message, the completions
// shape in choices[0].text, and each writes logprobs its API's way.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/output_parser.h"
#include "engine/session.h"
#include "server/api_error.h"

namespace mlx_cpp::server {

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;
  // Speculative decoding's drafts (OpenAI's predicted-output fields),
  // reported when the request speculated.
  bool speculative = false;
  int accepted_prediction_tokens = 0, rejected_prediction_tokens = 0;
  int reasoning_tokens = 0;  // of completion_tokens, those the model thought in
};

nlohmann::ordered_json usage_json(const Usage& usage);
// OpenAI's finish reasons; a generation cancelled by the server (shutdown)
// is reported as "cancelled".
std::string finish_reason_of(const TextResult& result);

// One response of any API, streamed or whole. The writer that drives a
// task (completion_handler.cpp) only moves these texts to the client.
class ResponseShape {
 public:
  virtual ~ResponseShape() = default;
  // Stream texts (already framed as server-sent events): the opening, one
  // generated piece (empty when there is nothing to send yet: the answer
  // parser holds text that may become markup), and the end after finish().
  virtual std::string stream_opening() = 0;
  virtual std::string stream_chunk(const TextChunk& chunk) = 0;
  virtual std::string stream_closing(const TextResult& result, const Usage& usage,
                                     bool include_usage) = 0;
  // A fault after the stream started (the status is already 200).
  virtual std::string stream_error(const ErrorResponse& error);
  // The body of a whole response that failed after its 200 was sent.
  virtual nlohmann::ordered_json error_body(const ErrorResponse& error) const { return error.body; }
  // The generation ended: the parser gives up what it held.
  virtual void finish() {}
  // What the answer reasoned (after finish), for usage.
  virtual std::string reasoning() const { return ""; }
  // A whole (non-streamed) response from every chunk of the generation,
  // after finish(). Non-streamed answers still pass each chunk through
  // stream_chunk first (the parser reads them); its text is dropped.
  virtual nlohmann::ordered_json whole_response(const std::vector<TextChunk>& chunks,
                                                const TextResult& result, const Usage& usage) = 0;
};

// OpenAI's two completion APIs: chunks of one JSON shape, usage in a last
// chunk when asked, then [DONE].
class OpenAIShape : public ResponseShape {
 public:
  std::string stream_opening() override;
  std::string stream_chunk(const TextChunk& chunk) override;
  std::string stream_closing(const TextResult& result, const Usage& usage,
                             bool include_usage) override;

 protected:
  OpenAIShape(std::string id, std::string object, std::string model, bool logprobs);
  // The chunk opening a stream (chat: the assistant role), or null.
  virtual nlohmann::ordered_json opening_chunk() const = 0;
  // The chunk for one piece of generated text, or null.
  virtual nlohmann::ordered_json text_chunk(const TextChunk& chunk) = 0;
  // The chunks ending a stream: the held text, then the finish reason.
  virtual std::vector<nlohmann::ordered_json> closing_chunks(const TextResult& result) = 0;
  nlohmann::ordered_json usage_chunk(const Usage& usage) const;
  nlohmann::ordered_json envelope(const std::string& object) const;
  std::string id_;
  std::string chunk_object_;
  std::string model_;
  long long created_;
  bool logprobs_;
};

// Chat answers go through `parser` (content, reasoning, tool calls).
std::unique_ptr<ResponseShape> make_chat_shape(const std::string& model, bool logprobs,
                                               chat::OutputParser parser);
std::unique_ptr<ResponseShape> make_completion_shape(const std::string& model, bool logprobs);

}  // namespace mlx_cpp::server
