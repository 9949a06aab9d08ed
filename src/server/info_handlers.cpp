// GET /v1/models, GET /health, POST /tokenize, POST /detokenize,
// GET /metrics. Tokenizing runs on the engine thread like everything that
// touches the model.
#include "server/generation_task.h"
#include "server/request_fields.h"
#include "server/route_context.h"

namespace mlx_cpp::server {
namespace {

nlohmann::ordered_json model_entry(const EngineThread& engine) {
  auto info = engine.model_info();
  nlohmann::ordered_json entry = {{"id", engine.model_id()},
                                  {"object", "model"},
                                  {"created", info ? info->created : 0},
                                  {"owned_by", "mlx-cpp"}};
  if (info) entry["context_length"] = info->context_size;
  return entry;
}

// Runs `work` on the engine thread and answers with the JSON it returns.
void run_on_engine(RouteContext& context, httplib::Response& response,
                   std::function<nlohmann::ordered_json(Backend&)> work) {
  auto channel = std::make_shared<ResultChannel>();
  context.engine.post({[work = std::move(work)](Backend& backend, ResultChannel& results) {
                         try {
                           results.push(UtilityResult{work(backend)});
                         } catch (...) {
                           results.push(error_response_for(std::current_exception()));
                         }
                       },
                       channel});
  TaskEvent event = channel->wait();
  if (auto* error = std::get_if<ErrorResponse>(&event)) return set_error(response, *error);
  set_json(response, 200, std::get<UtilityResult>(event).body);
}

void require_ready(const EngineThread& engine) {
  if (engine.state() != EngineState::ready)
    throw ApiError(503, "unavailable_error", "the model is not ready");
}

}  // namespace

void handle_models(RouteContext& context, const httplib::Request& request,
                   httplib::Response& response) {
  if (request.matches.size() > 1) {
    if (request.matches[1] != context.engine.model_id())
      throw ApiError(404, "not_found_error",
                     "model '" + request.matches[1].str() +
                         "' is not served here (this server serves '" + context.engine.model_id() +
                         "')",
                     "model", "model_not_found");
    return set_json(response, 200, model_entry(context.engine));
  }
  set_json(response, 200, {{"object", "list"}, {"data", {model_entry(context.engine)}}});
}

void handle_health(RouteContext& context, httplib::Response& response) {
  switch (context.engine.state()) {
    case EngineState::ready:
      return set_json(response, 200, {{"status", "ok"}});
    case EngineState::loading:
      return set_json(response, 503, {{"status", "loading"}});
    case EngineState::stopping:
      return set_json(response, 503, {{"status", "stopping"}});
    case EngineState::failed:
      return set_json(response, 503,
                      {{"status", "error"}, {"message", context.engine.load_error()}});
  }
}

// Body: {"content" | "prompt": text, "add_special": bool} or {"messages": [...]}
// (rendered with the chat template, as a chat request would be).
void handle_tokenize(RouteContext& context, const httplib::Request& request,
                     httplib::Response& response) {
  require_ready(context.engine);
  const auto body = parse_json_body(request.body);
  auto info = *context.engine.model_info();
  CompletionRequest prompt;
  if (body.contains("messages")) {
    prompt = parse_chat_request(body, info);
  } else {
    auto text = optional_string(body, "content");
    if (!text) text = optional_string(body, "prompt");
    if (!text) throw invalid_request("'content' (a string) or 'messages' is required", "content");
    prompt.endpoint = Endpoint::completion;
    prompt.prompt_text = *text;
  }
  bool add_special = optional_bool(body, "add_special").value_or(false);
  if (auto value = optional_bool(body, "add_special_tokens")) add_special = *value;
  run_on_engine(context, response, [prompt, add_special, info](Backend& backend) {
    auto ids = prompt.endpoint == Endpoint::chat ? prompt_token_ids(backend, prompt)
                                                 : backend.encode(prompt.prompt_text, add_special);
    return nlohmann::ordered_json{
        {"tokens", ids}, {"count", ids.size()}, {"max_model_len", info.context_size}};
  });
}

// Body: {"tokens": [ids]} → {"content": text} (llama.cpp's key; "prompt" is vLLM's).
void handle_detokenize(RouteContext& context, const httplib::Request& request,
                       httplib::Response& response) {
  require_ready(context.engine);
  const auto body = parse_json_body(request.body);
  const int vocab = context.engine.model_info()->vocab_size;
  auto tokens = body.find("tokens");
  if (tokens == body.end() || !tokens->is_array())
    throw invalid_request("'tokens' must be a list of token ids", "tokens");
  std::vector<int> ids;
  for (const auto& id : *tokens) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab)
      throw invalid_request("'tokens' must hold integers in [0, " + std::to_string(vocab) + ")",
                            "tokens");
    ids.push_back(id.get<int>());
  }
  run_on_engine(context, response, [ids](Backend& backend) {
    auto text = backend.decode(ids);
    return nlohmann::ordered_json{{"content", text}, {"prompt", text}};
  });
}

void handle_metrics(RouteContext& context, httplib::Response& response) {
  EngineLoad load{context.engine.queued(), context.engine.active()};
  response.set_content(context.metrics.render(load), "text/plain; version=0.0.4");
}

}  // namespace mlx_cpp::server
