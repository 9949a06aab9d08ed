#pragma once
// What a request asks of speculative decoding: where proposals come from
// and how many tokens one verify checks at most.
#include <string>

namespace mlx_cpp {

enum class DraftKind {
  none,
  draft_model,    // a smaller model with the same vocabulary (the server's or CLI's)
  prompt_lookup,  // tokens copied from the context after a matching n-gram
};

struct SpeculativeOptions {
  DraftKind kind = DraftKind::none;
  int draft_tokens = 3;  // proposals per verify at most (mlx-lm's num_draft_tokens is 2)
  int ngram = 3;         // prompt lookup: the longest n-gram it matches (then shorter ones)
  // Confidence scheduling (engine/speculative/draft_schedule.h): each
  // verify checks as many drafts (at most draft_tokens) as pay on this
  // machine, none when none do. Off: always draft_tokens.
  bool confidence = true;
  bool enabled() const { return kind != DraftKind::none; }
};

// "draft", "prompt-lookup" or "none".
std::string draft_kind_name(DraftKind kind);
// The inverse; throws Error naming the accepted values.
DraftKind parse_draft_kind(const std::string& name);
// Throws Error naming the option for out-of-range values.
void validate_speculative_options(const SpeculativeOptions& options);

}  // namespace mlx_cpp
