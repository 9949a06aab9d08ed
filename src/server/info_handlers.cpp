// GET /v1/models, GET /health, POST /tokenize, POST /detokenize,
// GET /metrics, GET /stats. Tokenizing runs on the HTTP thread (the
// tokenizer and template are read-only), never behind a generation.
#include "server/generation_task.h"
#include "server/request_fields.h"
#include "server/route_context.h"

namespace mlx_cpp::server {
namespace {

nlohmann::ordered_json model_entry(const EngineThread& engine, const ServerConfig& config) {
  auto info = engine.model_info();
  nlohmann::ordered_json entry = {{"id", engine.model_id()},
                                  {"object", "model"},
                                  {"created", info ? info->created : 0},
                                  {"owned_by", "mlx-cpp"}};
  if (!info) return entry;
  entry["context_length"] = info->context_size;
  entry["architecture"] = info->architecture;
  // What a request's "speculative" field may name here, and what it gets
  // when it names nothing (clients such as the web page offer the choice).
  auto sources = nlohmann::ordered_json::array({draft_kind_name(DraftKind::prompt_lookup)});
  if (info->draft_model) sources.push_back(draft_kind_name(DraftKind::draft_model));
  entry["speculative"] = {{"sources", sources},
                          {"default", draft_kind_name(info->defaults.speculative.kind)}};
  // The KV cache requests get unless they set kv_bits.
  const auto& kv_cache = info->defaults.kv_cache;
  entry["kv_cache"] =
      kv_cache.quantization
          ? nlohmann::ordered_json{{"kv_bits", kv_cache.quantization->bits},
                                   {"kv_group_size", kv_cache.quantization->group_size},
                                   {"quantized_kv_start", kv_cache.quantized_start},
                                   {"float_layers", kv_cache.float_layers},
                                   {"kv_scheme", kv_packing_name(kv_cache.quantization->packing)}}
          : nlohmann::ordered_json{{"kv_bits", nullptr}};
  // How answers are parsed: the tool-call format, and the think tags
  // whose contents go to reasoning_content (null: not parsed).
  const auto& format = info->output_format;
  entry["tool_call_format"] =
      format.tool_calls ? nlohmann::ordered_json(format.tool_calls->name()) : nullptr;
  entry["reasoning"] = nullptr;
  if (config.parse_reasoning && format.tool_calls && format.tool_calls->parses_reasoning())
    entry["reasoning"] = {{"format", format.tool_calls->name()}};
  else if (config.parse_reasoning && !format.reasoning.empty())
    entry["reasoning"] = {{"start", format.reasoning.start}, {"end", format.reasoning.end}};
  return entry;
}

const Backend& ready_backend(const EngineThread& engine) {
  const Backend* backend = engine.backend();
  if (engine.state() != EngineState::ready || !backend)
    throw ApiError(503, "unavailable_error", "the model is not ready");
  return *backend;
}

// A mounted adapter as a model name ("<model>:<adapter>"), for clients
// that can only choose a model.
nlohmann::ordered_json adapter_model_entry(const EngineThread& engine, const std::string& name) {
  auto info = engine.model_info();
  return {{"id", engine.model_id() + ":" + name}, {"object", "model"},
          {"created", info ? info->created : 0},  {"owned_by", "mlx-cpp"},
          {"parent", engine.model_id()},          {"adapter", name}};
}

std::vector<std::string> mounted_adapter_names(const EngineThread& engine) {
  std::vector<std::string> names;
  if (const Backend* backend = engine.backend())
    for (const auto& mounted : backend->adapters()) names.push_back(mounted.adapter->name);
  return names;
}

}  // namespace

void handle_models(RouteContext& context, const httplib::Request& request,
                   httplib::Response& response) {
  const auto adapters = mounted_adapter_names(context.engine);
  if (request.matches.size() > 1) {
    for (const auto& name : adapters)
      if (request.matches[1] == context.engine.model_id() + ":" + name)
        return set_json(response, 200, adapter_model_entry(context.engine, name));
    if (request.matches[1] != context.engine.model_id())
      throw ApiError(404, "not_found_error",
                     "model '" + request.matches[1].str() +
                         "' is not served here (this server serves '" + context.engine.model_id() +
                         "')",
                     "model", "model_not_found");
    return set_json(response, 200, model_entry(context.engine, context.config));
  }
  // (array(): braces around one JSON value copy it under clang, C++'s
  // rules for a one-element list, where GCC makes a list of it.)
  auto data = nlohmann::ordered_json::array({model_entry(context.engine, context.config)});
  for (const auto& name : adapters) data.push_back(adapter_model_entry(context.engine, name));
  set_json(response, 200, {{"object", "list"}, {"data", data}});
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
  const Backend& backend = ready_backend(context.engine);
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
  auto ids = prompt.endpoint == Endpoint::chat ? render_prompt(backend, prompt).ids
                                               : backend.encode(prompt.prompt_text, add_special);
  set_json(response, 200,
           {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", info.context_size}});
}

// Body: {"tokens": [ids]} → {"content": text} (llama.cpp's key; "prompt" is vLLM's).
void handle_detokenize(RouteContext& context, const httplib::Request& request,
                       httplib::Response& response) {
  const Backend& backend = ready_backend(context.engine);
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
  auto text = backend.decode(ids);
  set_json(response, 200, {{"content", text}, {"prompt", text}});
}

namespace {

EngineLoad engine_load(const EngineThread& engine) {
  return {engine.queued(), engine.active(), engine.counts()};
}

}  // namespace

void handle_metrics(RouteContext& context, httplib::Response& response) {
  response.set_content(context.metrics.render(engine_load(context.engine)),
                       "text/plain; version=0.0.4");
}

void handle_stats(RouteContext& context, httplib::Response& response) {
  set_json(response, 200, stats_body(engine_load(context.engine)));
}

void handle_cache_flush(RouteContext& context, httplib::Response& response) {
  if (!context.engine.counts().ssd_cache_enabled)
    throw invalid_request("this server keeps no SSD cache (serve --ssd-cache DIR)", "");
  context.engine.flush_prompt_cache();
  set_json(
      response, 200,
      {{"flushed", true}, {"ssd_cache", stats_body(engine_load(context.engine))["ssd_cache"]}});
}

}  // namespace mlx_cpp::server
