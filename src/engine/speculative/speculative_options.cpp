#include "engine/speculative/speculative_options.h"

#include "io/error.h"

namespace mlx_cpp {

// At most this many proposals per verify: past it a verify costs more
// than a rejected run could save on any model here.
constexpr int kMaxDraftTokens = 32;
constexpr int kMaxNgram = 16;

std::string draft_kind_name(DraftKind kind) {
  switch (kind) {
    case DraftKind::draft_model:
      return "draft";
    case DraftKind::prompt_lookup:
      return "prompt-lookup";
    case DraftKind::none:
      break;
  }
  return "none";
}

DraftKind parse_draft_kind(const std::string& name) {
  if (name == "draft" || name == "draft-model" || name == "draft_model")
    return DraftKind::draft_model;
  if (name == "prompt-lookup" || name == "prompt_lookup" || name == "ngram")
    return DraftKind::prompt_lookup;
  if (name == "none" || name.empty()) return DraftKind::none;
  throw Error("speculative decoding: unknown draft source '" + name +
              "' (expected draft, prompt-lookup or none)");
}

void validate_speculative_options(const SpeculativeOptions& options) {
  if (options.draft_tokens < 1 || options.draft_tokens > kMaxDraftTokens)
    throw Error("speculative decoding: draft tokens must be in [1, " +
                std::to_string(kMaxDraftTokens) + "]");
  if (options.ngram < 1 || options.ngram > kMaxNgram)
    throw Error("speculative decoding: the n-gram length must be in [1, " +
                std::to_string(kMaxNgram) + "]");
}

}  // namespace mlx_cpp
