// What constrained decoding costs per token on this machine, against the
// decode step it rides on, measured in the same run: the matcher's
// next-token mask (xgrammar's bitmask over the whole vocabulary), the mask
// turned into a [vocab] array and applied to a logits row, and one plain
// decode step (the fused one-token forward) of the same model. The grammar
// is a JSON schema; the tokens fed are a valid document's, tokenized.
// Also: building the vocabulary (once per model) and compiling the schema.
//
// usage: grammar_cost MODEL_DIR
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "engine/model_runtime.h"
#include "grammar/token_grammar.h"

namespace mx = mlx::core;
using namespace mlx_cpp;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

const char* kSchema = R"({"type": "object", "properties": {
  "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
  "tags": {"type": "array", "items": {"type": "string"}},
  "address": {"type": "object", "properties": {"city": {"type": "string"},
              "zip": {"type": "string", "pattern": "[0-9]{5}"}}, "required": ["city", "zip"]}},
  "required": ["name", "age", "tags", "address"], "additionalProperties": false})";

const char* kDocument =
    R"({"name": "Ada Lovelace, Countess of Lovelace", "age": 36, "tags": ["mathematics", )"
    R"("poetical science", "the analytical engine", "notes"], "address": {"city": "London", )"
    R"("zip": "12345"}})";

double plain_decode_step(const ModelRuntime& runtime) {
  const auto& model = runtime.model();
  std::vector<int> context(128, 100);
  auto caches = model.make_caches();
  model.forward(mx::array(context.data(), {1, 128}, mx::int32), caches);
  evaluate_cache_state(caches);
  int token = 500;
  double best = 1e9;
  for (int run = 0; run < 8; ++run) {
    const auto start = Clock::now();
    mx::eval(model.forward(mx::array(&token, {1, 1}, mx::int32), caches));
    best = std::min(best, since(start));
    for (auto& cache : caches) cache->trim(1);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: grammar_cost MODEL_DIR\n");
    return 2;
  }
  auto runtime = ModelRuntime::open(argv[1], {0, KernelMode::fast});
  const int vocab = runtime->model().vocab_size();
  auto start = Clock::now();
  const auto& vocabulary = runtime->grammar_vocabulary();
  const double vocabulary_seconds = since(start);
  start = Clock::now();
  grammar::GrammarSpec spec{grammar::GrammarSpec::Kind::json_schema, kSchema};
  auto compiled = vocabulary.compile(spec);
  const double compile_seconds = since(start);

  const auto tokens = runtime->encode(kDocument, false);
  auto logits = mx::zeros({1, vocab}, mx::float32);
  mx::eval(logits);
  double mask_seconds = 0, apply_seconds = 0;
  grammar::TokenConstraint constraint(compiled);
  for (int token : tokens) {
    start = Clock::now();
    auto allowed = constraint.allowed();  // xgrammar fills its bitmask here
    mask_seconds += since(start);
    start = Clock::now();
    mx::eval(grammar::mask_logits(logits, allowed));
    apply_seconds += since(start);
    if (!constraint.accept(token)) {
      std::fprintf(stderr, "the document left the grammar at token %d\n", token);
      return 1;
    }
  }
  const double per_token = (mask_seconds + apply_seconds) / tokens.size();
  const double step = plain_decode_step(*runtime);
  std::printf("vocabulary: %d tokens, built in %.0f ms; schema compiled in %.1f ms\n", vocab,
              vocabulary_seconds * 1e3, compile_seconds * 1e3);
  std::printf("per token over %zu tokens: next-token bitmask %.1f us, mask applied %.1f us\n",
              tokens.size(), mask_seconds / tokens.size() * 1e6,
              apply_seconds / tokens.size() * 1e6);
  std::printf("plain decode step: %.2f ms; grammar cost per token: %.1f%% of a step\n", step * 1e3,
              per_token / step * 100);
  std::printf("RESULT grammar_us_per_token=%.1f decode_step_ms=%.2f ratio=%.4f\n", per_token * 1e6,
              step * 1e3, per_token / step);
  return 0;
}
