#include "server/backend.h"

namespace mlx_cpp::server {

int SessionBackend::context_size() const {
  return session_->context_size();
}

int SessionBackend::vocab_size() const {
  return session_->model().vocab_size();
}

GenerationOptions SessionBackend::default_options() const {
  return session_->default_options();
}

std::vector<int> SessionBackend::encode(const std::string& text, bool add_special_tokens) const {
  return session_->encode(text, add_special_tokens);
}

std::string SessionBackend::decode(const std::vector<int>& ids) const {
  return session_->tokenizer().decode(std::vector<TokenId>(ids.begin(), ids.end()), false);
}

std::string SessionBackend::render_chat(const nlohmann::ordered_json& messages,
                                        const nlohmann::ordered_json& tools,
                                        const nlohmann::ordered_json& template_kwargs) const {
  return session_->render_chat(messages, tools, /*add_generation_prompt=*/true, template_kwargs);
}

TextResult SessionBackend::generate(const TextRequest& request,
                                    const std::function<bool(const TextChunk&)>& on_chunk) {
  return session_->generate(request, on_chunk);
}

}  // namespace mlx_cpp::server
