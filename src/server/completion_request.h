#pragma once
// A validated /v1/chat/completions or /v1/completions request. Parsing runs
// on the HTTP thread against the served model's facts (vocabulary size and
// generation defaults); only tokenizing the prompt is left to the engine
// thread, which owns the tokenizer and template.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat/output_format.h"
#include "engine/adapter_registry.h"
#include "engine/session.h"

namespace mlx_cpp::server {

// Facts about the served model, published by the engine thread once loaded.
struct ModelInfo {
  std::string id;  // the name /v1/models lists and responses carry
  int context_size = 0;
  int vocab_size = 0;
  GenerationOptions defaults;           // from generation_config.json
  long long created = 0;                // unix seconds when loading finished
  bool draft_model = false;             // a draft model is loaded beside it
  chat::OutputFormat output_format;     // how its answers are parsed
  nlohmann::ordered_json architecture;  // model_type, tier, mixture_of_experts
  int embedding_dimension = 0;          // an embedding model's; 0: one that generates text
};

enum class Endpoint { chat, completion };

// OpenAI's tool_choice; required and named are enforced by a grammar.
enum class ToolChoice { automatic, none, required, named };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::chat;
  // Chat: messages with text content (parts joined), tools and template
  // kwargs, rendered by the model's template on the engine thread.
  nlohmann::ordered_json messages;
  nlohmann::ordered_json tools;
  nlohmann::ordered_json template_kwargs;  // reasoning_effort's switches included
  ToolChoice tool_choice = ToolChoice::automatic;
  std::string tool_choice_name;  // named: the function
  bool parallel_tool_calls = true;
  // thinking_token_budget: reasoning tokens before the engine ends the
  // think block (none: the server's --reasoning-budget).
  std::optional<int> thinking_budget;
  // Completions: the prompt as text, or as token ids when prompt_is_ids.
  std::string prompt_text;
  std::vector<int> prompt_ids;
  bool prompt_is_ids = false;
  // Whether the client set a length limit (otherwise: the rest of the context).
  bool max_tokens_given = false;
  TextRequest text;  // options with the model's defaults for omitted fields
  bool stream = false;
  bool include_usage = false;
  // Structured output (response_format, structured_outputs, grammar, ...).
  std::optional<grammar::GrammarSpec> grammar;
  std::string grammar_field;  // the request field that gave it
  // The adapters it asks for (adapter_request.h), resolved when served.
  std::vector<AdapterChoice> adapters;
};

// Throws ApiError (400) naming the field for any invalid input.
CompletionRequest parse_chat_request(const nlohmann::ordered_json& body, const ModelInfo& model);
CompletionRequest parse_completion_request(const nlohmann::ordered_json& body,
                                           const ModelInfo& model);

}  // namespace mlx_cpp::server
