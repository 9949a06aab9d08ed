// POST /v1/chat/completions and /v1/completions: validate on this HTTP
// thread, post one task to the engine, wait for its first event (which
// decides the status), then stream or collect the rest from the task's
// ResultChannel. A client that goes away cancels its task.
#include <chrono>
#include <memory>
#include <sstream>

#include "io/error.h"
#include "server/generation_task.h"
#include "server/request_fields.h"
#include "server/response_shapes.h"
#include "server/route_context.h"
#include "server/sse.h"

namespace mlx_cpp::server {
namespace {

using Clock = std::chrono::steady_clock;
// How often a waiting writer checks that its client is still connected.
constexpr std::chrono::milliseconds kPollInterval{100};

// Drives one accepted task's response from inside httplib's content
// provider; each call handles one event.
struct ResponseOptions {
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
};

class ResponseWriter {
 public:
  ResponseWriter(RouteContext& context, std::shared_ptr<ResultChannel> channel,
                 std::unique_ptr<ResponseShape> shape, ResponseOptions options, int prompt_tokens,
                 Clock::time_point arrival)
      : context_(context),
        channel_(std::move(channel)),
        shape_(std::move(shape)),
        stream_(options.stream),
        include_usage_(options.include_usage),
        logprobs_(options.logprobs),
        prompt_tokens_(prompt_tokens),
        arrival_(arrival) {}

  // httplib's provider contract: false aborts the connection.
  bool next(httplib::DataSink& sink) {
    if (stream_ && !opened_) {
      opened_ = true;
      auto opening = shape_->stream_opening();
      if (!opening.empty() && !write(sink, opening)) return false;
    }
    auto event = channel_->pop(kPollInterval);
    if (!event) return client_still_there(sink);
    if (auto* chunk = std::get_if<TextChunk>(&*event)) return on_chunk(sink, std::move(*chunk));
    if (auto* result = std::get_if<TextResult>(&*event)) return on_result(sink, *result);
    if (auto* error = std::get_if<ErrorResponse>(&*event)) return on_error(sink, *error);
    return true;
  }

  // Called when httplib lets the response go: an answer not written to the
  // end (the client went away) stops its generation and is counted.
  void release() {
    if (finished_) return;
    channel_->cancel();
    context_.metrics.record_cancelled_generation();
  }

 private:
  bool write(httplib::DataSink& sink, const std::string& data) {
    if (sink.write(data.data(), data.size())) return true;
    channel_->cancel();  // the client is gone: stop generating
    return false;
  }

  bool client_still_there(httplib::DataSink& sink) {
    if (sink.is_writable()) return true;
    channel_->cancel();
    return false;
  }

  bool on_chunk(httplib::DataSink& sink, TextChunk chunk) {
    if (chunk.text.empty() && (chunk.tokens.empty() || !logprobs_)) return true;
    if (!first_text_) first_text_ = Clock::now();
    auto text = shape_->stream_chunk(chunk);  // the answer parser reads every chunk
    if (stream_) return text.empty() ? client_still_there(sink) : write(sink, text);
    chunks_.push_back(std::move(chunk));
    return client_still_there(sink);
  }

  bool on_result(httplib::DataSink& sink, const TextResult& result) {
    Usage usage{prompt_tokens_, static_cast<int>(result.completion_ids.size()),
                result.cached_prompt_tokens};
    const auto& stats = result.stats;
    usage.speculative = stats.draft_kind != DraftKind::none;
    usage.accepted_prediction_tokens = stats.draft_accepted;
    usage.rejected_prediction_tokens = stats.draft_proposed - stats.draft_accepted;
    shape_->finish();
    if (auto reasoning = shape_->reasoning(); !reasoning.empty() && context_.engine.backend())
      usage.reasoning_tokens = static_cast<int>(
          context_.engine.backend()->encode(reasoning, /*add_special_tokens=*/false).size());
    record(result, usage);
    std::string data;
    if (stream_) {
      data = shape_->stream_closing(result, usage, include_usage_);
    } else {
      data = json_text(shape_->whole_response(chunks_, result, usage));
    }
    if (!write(sink, data)) return false;
    sink.done();
    finished_ = true;
    return true;
  }

  // A fault after the response started: the status is already 200, so the
  // error goes in the body (an SSE event for streams).
  bool on_error(httplib::DataSink& sink, const ErrorResponse& error) {
    std::string data = stream_ ? shape_->stream_error(error) : json_text(shape_->error_body(error));
    if (!write(sink, data)) return false;
    sink.done();
    finished_ = true;
    return true;
  }

  void record(const TextResult& result, const Usage& usage) {
    double first_token_seconds =
        std::chrono::duration<double>(first_text_.value_or(Clock::now()) - arrival_).count();
    context_.metrics.record_generation(usage.prompt_tokens, usage.completion_tokens,
                                       usage.cached_tokens, first_token_seconds,
                                       result.stats.generation_tokens_per_second());
    if (result.stats.draft_kind != DraftKind::none)
      context_.metrics.record_speculation(draft_kind_name(result.stats.draft_kind),
                                          result.stats.draft_proposed, result.stats.draft_accepted,
                                          result.stats.draft_steps);
    std::ostringstream detail;
    detail << "prompt=" << usage.prompt_tokens << " cached=" << usage.cached_tokens
           << " completion=" << usage.completion_tokens << " finish=" << finish_reason_of(result);
    set_log_detail(detail.str());
  }

  RouteContext& context_;
  std::shared_ptr<ResultChannel> channel_;
  std::unique_ptr<ResponseShape> shape_;
  bool stream_;
  bool include_usage_;
  bool logprobs_;
  int prompt_tokens_;
  Clock::time_point arrival_;
  std::optional<Clock::time_point> first_text_;
  std::vector<TextChunk> chunks_;
  bool opened_ = false;
  bool finished_ = false;  // the last event was written
};

}  // namespace

ModelInfo ready_model(const EngineThread& engine) {
  auto info = engine.model_info();
  if (!info || engine.state() != EngineState::ready)
    throw ApiError(503, "unavailable_error",
                   engine.state() == EngineState::loading ? "the model is still loading"
                                                          : "the server is not serving");
  return *info;
}

namespace {

// What a chat answer is parsed into: reasoning when the model thinks in
// tags (from the start, when the prompt opened the block), tool calls when
// the request offered tools.
chat::OutputParser answer_parser(const ServerConfig& config, const ModelInfo& model,
                                 const CompletionRequest& request, const RenderedPrompt& prompt) {
  chat::OutputOptions options;
  options.parse_reasoning = config.parse_reasoning;
  options.starts_in_reasoning =
      chat::prompt_opens_reasoning(prompt.chat_text, model.output_format.reasoning);
  options.parse_tool_calls = request.tools.is_array() && request.tool_choice != ToolChoice::none;
  if (options.parse_tool_calls) options.tools.tools = request.tools;
  options.max_calls = request.parallel_tool_calls ? 0 : 1;
  return chat::OutputParser(model.output_format, std::move(options));
}

// Compiling on the HTTP thread keeps a slow or failing schema off the engine.
std::shared_ptr<const grammar::CompiledGrammar> compile_request_grammar(
    const Backend& backend, const grammar::GrammarSpec& spec, const std::string& field) {
  try {
    return backend.compile_grammar(spec);
  } catch (const mlx_cpp::Error& error) {
    throw invalid_request(error.what(), field);
  }
}

}  // namespace

void serve_generation(RouteContext& context, httplib::Response& response, const ModelInfo& model,
                      CompletionRequest request, const ShapeMaker& make_shape,
                      std::chrono::steady_clock::time_point arrival) {
  if (model.embedding_dimension > 0)
    throw invalid_request("model '" + model.id +
                          "' is an embedding model: it answers POST /v1/embeddings only");
  const Backend* backend = context.engine.backend();
  if (!backend) throw ApiError(503, "unavailable_error", "the model is still loading");
  try {
    request.text.options.adapters = backend->resolve_adapters(request.adapters);
  } catch (const AdapterNotFound& error) {
    throw ApiError(404, "not_found_error", error.what(), "adapter", "adapter_not_found");
  }
  auto prompt = render_prompt(*backend, request);
  if (request.grammar)
    request.text.grammar =
        compile_request_grammar(*backend, *request.grammar, request.grammar_field);
  std::optional<chat::OutputParser> parser;
  if (request.endpoint == Endpoint::chat) {
    parser.emplace(answer_parser(context.config, model, request, prompt));
    // The request's thinking_token_budget, else the server's.
    request.text.thinking = thinking_budget(
        model.output_format, request.thinking_budget.value_or(context.config.reasoning_budget),
        prompt.chat_text);
  }
  auto shape = make_shape(request, std::move(parser), static_cast<int>(prompt.ids.size()));
  const ResponseOptions options{request.stream, request.include_usage, request.text.logprobs};
  auto channel = std::make_shared<ResultChannel>();
  context.engine.post(
      make_generation_job(*backend, std::move(request), std::move(prompt.ids), channel));

  TaskEvent first = channel->wait();
  if (auto* error = std::get_if<ErrorResponse>(&first)) return set_error(response, *error);
  const int prompt_tokens = std::get<PromptReady>(first).prompt_tokens;
  auto writer = std::make_shared<ResponseWriter>(context, channel, std::move(shape), options,
                                                 prompt_tokens, arrival);
  if (options.stream) response.set_header("Cache-Control", "no-cache");
  ++context.open_responses;  // until httplib releases the provider
  response.set_chunked_content_provider(
      options.stream ? "text/event-stream" : "application/json",
      [writer](size_t, httplib::DataSink& sink) { return writer->next(sink); },
      [writer, &context](bool) {
        writer->release();
        --context.open_responses;
      });
}

void handle_completion(RouteContext& context, const httplib::Request& http_request,
                       httplib::Response& response, Endpoint endpoint) {
  const auto arrival = Clock::now();
  const ModelInfo model = ready_model(context.engine);
  const auto body = parse_json_body(http_request.body);
  auto request = endpoint == Endpoint::chat ? parse_chat_request(body, model)
                                            : parse_completion_request(body, model);
  serve_generation(
      context, response, model, std::move(request),
      [&model](const CompletionRequest& request, std::optional<chat::OutputParser> parser, int) {
        if (parser) return make_chat_shape(model.id, request.text.logprobs, std::move(*parser));
        return make_completion_shape(model.id, request.text.logprobs);
      },
      arrival);
}

}  // namespace mlx_cpp::server
