#include "engine/session.h"

#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <algorithm>

#include "engine/stop_matcher.h"
#include "io/error.h"
#include "io/json_file.h"

namespace mlx_cpp {
namespace mx = mlx::core;
namespace {

std::vector<TokenLogprob> top_alternatives(const Tokenizer& tokenizer, const mx::array& logprobs,
                                           int count) {
  const int vocab = logprobs.shape(0);
  count = std::min(count, vocab);
  auto order =
      mx::slice(mx::argsort(mx::negative(mx::astype(logprobs, mx::float32))), {0}, {count});
  auto values = mx::astype(mx::take(logprobs, order), mx::float32);
  mx::eval({order, values});
  std::vector<TokenLogprob> result;
  for (int i = 0; i < count; ++i) {
    int id = order.data<uint32_t>()[i];
    result.push_back({id, tokenizer.decode({id}, false), values.data<float>()[i]});
  }
  return result;
}

float logprob_of(const mx::array& logprobs, int id) {
  return mx::astype(mx::take(logprobs, mx::array(id)), mx::float32).item<float>();
}

}  // namespace

std::unique_ptr<Session> Session::open(const std::filesystem::path& directory,
                                       const SessionOptions& options) {
  std::unique_ptr<Session> session(new Session());
  session->loaded_ = load_model(directory, {options.kernels});
  session->kernels_ = options.kernels;
  session->tokenizer_ = Tokenizer::from_directory(directory);
  // The template and its special tokens come from the same loader the
  // `template` command uses, so both render the same prompt.
  if (!session->tokenizer_->chat_template().empty()) {
    auto model_template = load_model_chat_template(directory);
    session->chat_template_ = std::make_unique<ChatTemplate>(model_template.source);
    session->template_special_tokens_ = std::move(model_template.special_tokens);
  }
  auto generation_path = directory / "generation_config.json";
  session->generation_config_ = std::filesystem::exists(generation_path)
                                    ? read_json_file(generation_path)
                                    : nlohmann::json::object();
  // As mlx-lm: the config's EOS ids, or the tokenizer's when it has none.
  session->eos_token_ids_ = session->loaded_.eos_token_ids;
  if (session->eos_token_ids_.empty() && session->tokenizer_->eos_token_id())
    session->eos_token_ids_.push_back(*session->tokenizer_->eos_token_id());
  const auto& config = session->loaded_.config;
  int model_context = config.value("max_position_embeddings", 4096);
  session->context_size_ = options.context_size > 0 ? options.context_size : model_context;
  return session;
}

GenerationOptions Session::default_options() const {
  GenerationOptions options;
  const auto& config = generation_config_;
  auto number = [&](const char* key) -> std::optional<double> {
    if (config.contains(key) && config[key].is_number()) return config[key].get<double>();
    return std::nullopt;
  };
  bool sample = config.value("do_sample", true);
  if (auto value = number("temperature"); value && sample) options.sampler.temperature = *value;
  if (auto value = number("top_p")) options.sampler.top_p = float(*value);
  if (auto value = number("top_k")) options.sampler.top_k = int(*value);
  if (auto value = number("min_p")) options.sampler.min_p = float(*value);
  if (auto value = number("repetition_penalty"); value && *value != 1.0)
    options.penalties.repetition_penalty = float(*value);
  if (options.sampler.top_k >= model().vocab_size()) options.sampler.top_k = 0;
  return options;
}

std::vector<int> Session::encode(const std::string& text, bool add_special_tokens) const {
  return tokenizer_->encode(text, add_special_tokens);
}

std::string Session::render_chat(const nlohmann::ordered_json& messages,
                                 const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                 const nlohmann::ordered_json& extra) const {
  if (!chat_template_)
    throw Error("this model has no chat template (tokenizer_config.json chat_template)");
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = messages;
  if (!tools.is_null()) context["tools"] = tools;
  context["add_generation_prompt"] = add_generation_prompt;
  for (const auto& [key, value] : template_special_tokens_.items()) context[key] = value;
  if (extra.is_object())
    for (const auto& [key, value] : extra.items()) context[key] = value;
  return chat_template_->render(context);
}

void Session::reset_cache() {
  cache_.clear();
  cached_tokens_.clear();
}

int Session::reuse_cached_prefix(const std::vector<int>& prompt) {
  if (cache_.empty()) {
    cache_ = loaded_.model->make_caches();
    cached_tokens_.clear();
    return 0;
  }
  size_t common = 0;
  while (common < cached_tokens_.size() && common < prompt.size() &&
         cached_tokens_[common] == prompt[common])
    ++common;
  if (common == prompt.size() && common > 0) --common;  // recompute the last token
  const int drop = static_cast<int>(cached_tokens_.size() - common);
  bool trimmable = std::all_of(cache_.begin(), cache_.end(),
                               [](const auto& cache) { return cache->is_trimmable(); });
  if (drop > 0 && !trimmable) {
    reset_cache();
    cache_ = loaded_.model->make_caches();
    return 0;
  }
  for (auto& cache : cache_) cache->trim(drop);
  cached_tokens_.resize(common);
  return static_cast<int>(common);
}

TextResult Session::generate(const TextRequest& request,
                             const std::function<bool(const TextChunk&)>& on_chunk) {
  const auto& prompt = request.prompt_ids;
  if (prompt.empty()) throw Error("the prompt is empty");
  if (static_cast<int>(prompt.size()) >= context_size_)
    throw Error("the prompt has " + std::to_string(prompt.size()) +
                " tokens, more than the context size " + std::to_string(context_size_) + " allows");
  auto options = request.options;
  options.max_tokens = std::min(options.max_tokens, context_size_ - int(prompt.size()));
  options.prefill_step_size = default_prefill_step(kernels_);
  options.kernels = kernels_;

  TextResult result;
  result.cached_prompt_tokens = reuse_cached_prefix(prompt);
  const std::vector<int> history(prompt.begin(), prompt.begin() + result.cached_prompt_tokens);
  const std::vector<int> fresh(prompt.begin() + result.cached_prompt_tokens, prompt.end());
  // Until generation finishes, the cache content is only known to hold the prefix.
  cached_tokens_ = history;

  StreamingDetokenizer detokenizer(*tokenizer_);
  StopMatcher stops(request.stop);
  bool cancelled = false;
  auto emit = [&](TextChunk& chunk) {
    result.text += chunk.text;
    if (!on_chunk(chunk)) cancelled = true;
    return !cancelled;
  };
  auto on_token = [&](const GeneratedToken& token) {
    result.completion_ids.push_back(token.id);
    TextChunk chunk;
    chunk.text = stops.add(detokenizer.add(token.id));
    if (request.logprobs || request.top_logprobs > 0)
      chunk.tokens.push_back(
          {token.id, tokenizer_->decode({token.id}, false), logprob_of(token.logprobs, token.id)});
    if (request.top_logprobs > 0)
      chunk.alternatives.push_back(
          top_alternatives(*tokenizer_, token.logprobs, request.top_logprobs));
    if (!emit(chunk)) return false;
    return !stops.matched();
  };
  GenerationStats stats;
  try {
    stats =
        generate_tokens(*loaded_.model, cache_, fresh, options, eos_token_ids_, on_token, history);
  } catch (...) {
    reset_cache();  // a failed step leaves the caches in an unknown state
    throw;
  }
  cached_tokens_ = prompt;
  cached_tokens_.insert(cached_tokens_.end(), stats.fed_ids.begin(), stats.fed_ids.end());
  if (cache_.empty() || cache_.front()->offset() != static_cast<int>(cached_tokens_.size()))
    reset_cache();  // bookkeeping disagrees with the cache: never reuse it
  if (!stops.matched() && !cancelled) {
    TextChunk tail;
    tail.text = stops.add(detokenizer.finish());
    tail.text += stops.flush();
    if (!tail.text.empty()) emit(tail);
  }
  result.stats = stats;
  if (stops.matched() || stats.finish_reason == FinishReason::stop)
    result.finish_reason = "stop";
  else if (cancelled)
    result.finish_reason = "cancelled";
  else
    result.finish_reason = "length";
  return result;
}

}  // namespace mlx_cpp
