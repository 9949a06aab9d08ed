#pragma once
// What a caller asks of the engine and what it gets back: prompt ids and
// options in; final text pieces while it runs; the whole result at the end.
#include <memory>
#include <string>
#include <vector>

#include "engine/thinking_budget.h"
#include "engine/token_generator.h"

namespace mlx_cpp {

namespace grammar {
class CompiledGrammar;
}
struct CachedPrompt;

struct TextRequest {
  std::vector<int> prompt_ids;  // already tokenized (see ModelRuntime::encode / render_chat)
  GenerationOptions options;
  std::vector<std::string> stop;  // stop strings, matched on decoded text
  int top_logprobs = 0;           // alternatives per token to report (0 = none)
  bool logprobs = false;          // report the chosen token's logprob
  // Output held to a grammar (null: free text), compiled against this
  // model's vocabulary (ModelRuntime::grammar_vocabulary).
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // How long the model may think before the engine closes its think block
  // (not applied to a request held to a grammar: the grammar decides).
  ThinkingBudget thinking;
  // Caches of a prompt prefilled earlier (engine/cached_prompt.h, made and
  // checked against the model by cached_prompt_from) that this request
  // continues from; prompt_ids then hold only what follows them.
  // The prefix cache neither serves nor keeps such a request.
  std::shared_ptr<const CachedPrompt> cached_prompt;
  // End-of-sequence tokens are generated like any other, up to max_tokens
  // (benchmarks; vLLM's and llama.cpp's ignore_eos).
  bool ignore_eos = false;
};

struct TokenLogprob {
  int id = 0;
  std::string text;
  float logprob = 0;
};

// One streamed piece: text that is final (never contains a partial stop
// string, never broken UTF-8), with the tokens that produced it.
struct TextChunk {
  std::string text;
  std::vector<TokenLogprob> tokens;                     // chosen tokens, when logprobs
  std::vector<std::vector<TokenLogprob>> alternatives;  // per token, when top_logprobs > 0
};

struct TextResult {
  std::string text;
  std::vector<int> completion_ids;
  GenerationStats stats;
  std::string finish_reason;  // "stop" or "length" ("cancelled" when the caller stopped it)
  int cached_prompt_tokens = 0;
};

}  // namespace mlx_cpp
