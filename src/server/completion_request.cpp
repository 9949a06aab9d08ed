#include "server/completion_request.h"

#include "io/error.h"
#include "model/logits_processors.h"
#include "model/sampler.h"
#include "server/adapter_request.h"
#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/request_fields.h"
#include "server/structured_output_request.h"

namespace mlx_cpp::server {
namespace {

constexpr int kMaxStopStrings = 16;
constexpr int kMaxTopLogprobs = 20;

// Type checks of fields that are accepted but unused, and refusal of
// OpenAI fields with no meaning here (clearer than silently doing something
// else).
void check_unused_and_unsupported_fields(const nlohmann::ordered_json& body) {
  optional_string(body, "model");  // any name is served by the one model (docs/server.md)
  optional_string(body, "user");   // accepted, unused
  if (auto n = optional_integer(body, "n"); n && *n != 1)
    throw invalid_request("'n' must be 1: one choice per request is supported", "n");
  if (auto best_of = optional_integer(body, "best_of"); best_of && *best_of != 1)
    throw invalid_request("'best_of' must be 1", "best_of");
}

std::vector<std::string> parse_stop(const nlohmann::ordered_json& body) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return {};
  if (it->is_string())
    return it->get<std::string>().empty() ? std::vector<std::string>{}
                                          : std::vector<std::string>{it->get<std::string>()};
  if (!it->is_array())
    throw invalid_request("'stop' must be a string or a list of strings", "stop");
  if (it->size() > kMaxStopStrings)
    throw invalid_request("'stop' has more than " + std::to_string(kMaxStopStrings) + " strings",
                          "stop");
  std::vector<std::string> stop;
  for (const auto& item : *it) {
    if (!item.is_string()) throw invalid_request("'stop' must contain only strings", "stop");
    if (!item.get<std::string>().empty()) stop.push_back(item.get<std::string>());
  }
  return stop;
}

std::map<int, float> parse_logit_bias(const nlohmann::ordered_json& body, int vocab_size) {
  std::map<int, float> bias;
  const auto entries = optional_object(body, "logit_bias");
  for (const auto& [key, value] : entries.items()) {
    size_t used = 0;
    long id = -1;
    try {
      id = std::stol(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != key.size() || id < 0 || id >= vocab_size)
      throw invalid_request("'logit_bias' key '" + key + "' is not a token id in [0, " +
                                std::to_string(vocab_size) + ")",
                            "logit_bias");
    if (!value.is_number() || value.get<double>() < -100 || value.get<double>() > 100)
      throw invalid_request("'logit_bias' values must be numbers in [-100, 100]", "logit_bias");
    bias[static_cast<int>(id)] = value.get<float>();
  }
  return bias;
}

void parse_sampling(const nlohmann::ordered_json& body, const ModelInfo& model,
                    GenerationOptions& options) {
  auto& sampler = options.sampler;
  if (auto value = optional_number(body, "temperature", 0, 2)) sampler.temperature = float(*value);
  if (auto value = optional_number(body, "top_p", 0, 1)) {
    // top_p 0 keeps only the most likely token, which is top_k 1.
    sampler.top_p = *value == 0 ? 1.0f : float(*value);
    if (*value == 0) sampler.top_k = 1;
  }
  if (auto value = optional_integer(body, "top_k", -1, model.vocab_size - 1))
    sampler.top_k = *value < 0 ? 0 : int(*value);  // -1 (vLLM) and 0 both disable it
  if (auto value = optional_number(body, "min_p", 0, 1)) sampler.min_p = float(*value);
  if (auto value = optional_integer(body, "seed")) sampler.seed = static_cast<uint64_t>(*value);

  auto& penalties = options.penalties;
  if (auto value = optional_number(body, "presence_penalty", -2, 2))
    penalties.presence_penalty = float(*value);
  if (auto value = optional_number(body, "frequency_penalty", -2, 2))
    penalties.frequency_penalty = float(*value);
  if (auto value = optional_number(body, "repetition_penalty", 0, 10))
    penalties.repetition_penalty = float(*value);
  penalties.logit_bias = parse_logit_bias(body, model.vocab_size);
  try {
    validate_sampler_options(sampler, model.vocab_size);
    validate_penalty_options(penalties, model.vocab_size);
  } catch (const mlx_cpp::Error& error) {
    throw invalid_request(error.what());
  }
}

// "speculative": a source name ("draft", "prompt-lookup", "none"), false,
// or {"source", "draft_tokens", "ngram", "schedule"} (fields left out keep the
// server's default); llama.cpp's "speculative.n_max" sets draft_tokens.
void parse_speculative(const nlohmann::ordered_json& body, SpeculativeOptions& options) {
  const auto it = body.find("speculative");
  auto kind_of = [](const std::string& name) {
    try {
      return parse_draft_kind(name);
    } catch (const mlx_cpp::Error& error) {
      throw invalid_request(error.what(), "speculative");
    }
  };
  if (it != body.end() && !it->is_null()) {
    if (it->is_boolean()) {
      if (!it->get<bool>()) options.kind = DraftKind::none;
    } else if (it->is_string()) {
      options.kind = kind_of(it->get<std::string>());
    } else if (it->is_object()) {
      if (auto source = optional_string(*it, "source")) options.kind = kind_of(*source);
      if (auto k = optional_integer(*it, "draft_tokens")) options.draft_tokens = int(*k);
      if (auto n = optional_integer(*it, "ngram")) options.ngram = int(*n);
      if (auto schedule = optional_string(*it, "schedule")) {
        if (*schedule != "confidence" && *schedule != "fixed")
          throw invalid_request("'speculative.schedule' must be confidence or fixed",
                                "speculative");
        options.confidence = *schedule == "confidence";
      }
    } else {
      throw invalid_request("'speculative' must be a source name, false or an object",
                            "speculative");
    }
  }
  if (auto k = optional_integer(body, "speculative.n_max")) options.draft_tokens = int(*k);
  if (!options.enabled()) return;
  try {
    validate_speculative_options(options);
  } catch (const mlx_cpp::Error& error) {
    throw invalid_request(error.what(), "speculative");
  }
}

// "kv_bits" (2-8, or 0 / false for float caches), "kv_group_size" and
// "quantized_kv_start", mlx-lm's names, and "kv_scheme" ("affine" or
// "turbo"), override the server's KV scheme for
// this request's own caches; the prefix cache keys entries by the scheme,
// so no other request ever reads them. The model checks the scheme when
// the request is submitted.
void parse_kv_cache(const nlohmann::ordered_json& body, KvCacheScheme& scheme) {
  const auto bits = body.find("kv_bits");
  if (bits != body.end() && !bits->is_null()) {
    if (bits->is_boolean() && !bits->get<bool>()) {
      scheme.quantization.reset();
    } else {
      const auto value = optional_integer(body, "kv_bits", 0, 8);
      if (*value == 0)
        scheme.quantization.reset();
      else
        scheme.quantization = KvQuantization{
            int(*value),
            scheme.quantization ? scheme.quantization->group_size : KvQuantization{}.group_size,
            scheme.quantization ? scheme.quantization->packing : KvQuantization{}.packing};
    }
  }
  if (auto packing = optional_string(body, "kv_scheme")) {
    if (!scheme.quantization)
      throw invalid_request("'kv_scheme' needs quantized KV caches ('kv_bits')", "kv_scheme");
    try {
      scheme.quantization->packing = parse_kv_packing(*packing);
    } catch (const mlx_cpp::Error& error) {
      throw invalid_request(error.what(), "kv_scheme");
    }
  }
  if (auto group = optional_integer(body, "kv_group_size", 1, 1024)) {
    if (!scheme.quantization)
      throw invalid_request("'kv_group_size' needs quantized KV caches ('kv_bits')",
                            "kv_group_size");
    scheme.quantization->group_size = int(*group);
  }
  if (auto start = optional_integer(body, "quantized_kv_start", 0, std::numeric_limits<int>::max()))
    scheme.quantized_start = int(*start);
}

void parse_length(const nlohmann::ordered_json& body, const ModelInfo& model, const char* preferred,
                  CompletionRequest& request) {
  auto limit = optional_integer(body, preferred, 1, model.context_size);
  if (!limit) limit = optional_integer(body, "max_tokens", 1, model.context_size);
  request.max_tokens_given = limit.has_value();
  request.text.options.max_tokens = limit ? int(*limit) : model.context_size;
}

void parse_stream(const nlohmann::ordered_json& body, CompletionRequest& request) {
  request.stream = optional_bool(body, "stream").value_or(false);
  auto stream_options = optional_object(body, "stream_options");
  request.include_usage = optional_bool(stream_options, "include_usage").value_or(false);
}

CompletionRequest parse_common(const nlohmann::ordered_json& body, const ModelInfo& model,
                               Endpoint endpoint) {
  check_unused_and_unsupported_fields(body);
  CompletionRequest request;
  request.endpoint = endpoint;
  request.text.options = model.defaults;
  parse_sampling(body, model, request.text.options);
  parse_speculative(body, request.text.options.speculative);
  parse_kv_cache(body, request.text.options.kv_cache);
  parse_length(body, model, endpoint == Endpoint::chat ? "max_completion_tokens" : "max_tokens",
               request);
  request.text.stop = parse_stop(body);
  request.text.ignore_eos = optional_bool(body, "ignore_eos").value_or(false);
  parse_stream(body, request);
  request.adapters = parse_adapter_choices(body, model.id);
  if (auto structured = parse_structured_output(body)) {
    request.grammar = std::move(structured->spec);
    request.grammar_field = structured->field;
  }
  return request;
}

}  // namespace

CompletionRequest parse_chat_request(const nlohmann::ordered_json& body, const ModelInfo& model) {
  auto request = parse_common(body, model, Endpoint::chat);
  parse_chat_fields(body, model, request);
  request.text.logprobs = optional_bool(body, "logprobs").value_or(false);
  if (auto top = optional_integer(body, "top_logprobs", 0, kMaxTopLogprobs)) {
    if (!request.text.logprobs && *top > 0)
      throw invalid_request("'top_logprobs' requires 'logprobs' to be true", "top_logprobs");
    request.text.top_logprobs = int(*top);
  }
  return request;
}

CompletionRequest parse_completion_request(const nlohmann::ordered_json& body,
                                           const ModelInfo& model) {
  auto request = parse_common(body, model, Endpoint::completion);
  if (optional_bool(body, "echo").value_or(false))
    throw invalid_request("'echo' is not supported", "echo");
  if (optional_string(body, "suffix")) throw invalid_request("'suffix' is not supported", "suffix");
  // The legacy API's logprobs is the number of alternatives (0..5).
  if (auto top = optional_integer(body, "logprobs", 0, 5)) {
    request.text.logprobs = true;
    request.text.top_logprobs = int(*top);
  }
  auto prompt = body.find("prompt");
  if (prompt == body.end()) throw invalid_request("'prompt' is required", "prompt");
  nlohmann::ordered_json value = *prompt;
  if (value.is_array() && value.size() == 1 && (value[0].is_string() || value[0].is_array()))
    value = value[0];  // a batch of one prompt
  if (value.is_string()) {
    request.prompt_text = value.get<std::string>();
  } else if (value.is_array() && !value.empty()) {
    for (const auto& id : value) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= model.vocab_size)
        throw invalid_request(
            "'prompt' token ids must be integers in [0, " + std::to_string(model.vocab_size) + ")",
            "prompt");
      request.prompt_ids.push_back(id.get<int>());
    }
    request.prompt_is_ids = true;
  } else {
    throw invalid_request("'prompt' must be a string or a list of token ids (batches of one)",
                          "prompt");
  }
  return request;
}

}  // namespace mlx_cpp::server
