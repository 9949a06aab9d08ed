#pragma once
// What the server asks of a loaded model. The engine thread is the only
// caller, so implementations need not be thread-safe. SessionBackend wraps
// mlx_cpp::Session; tests use a scripted fake, which keeps the HTTP layer
// testable without weights.
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/session.h"

namespace mlx_cpp::server {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual int context_size() const = 0;
  virtual int vocab_size() const = 0;
  virtual GenerationOptions default_options() const = 0;
  virtual std::vector<int> encode(const std::string& text, bool add_special_tokens) const = 0;
  virtual std::string decode(const std::vector<int>& ids) const = 0;
  virtual std::string render_chat(const nlohmann::ordered_json& messages,
                                  const nlohmann::ordered_json& tools,
                                  const nlohmann::ordered_json& template_kwargs) const = 0;
  virtual TextResult generate(const TextRequest& request,
                              const std::function<bool(const TextChunk&)>& on_chunk) = 0;
};

// Built on the engine thread (loading can take a while; /health says 503
// until it returns).
using BackendFactory = std::function<std::unique_ptr<Backend>()>;

class SessionBackend : public Backend {
 public:
  explicit SessionBackend(std::unique_ptr<Session> session) : session_(std::move(session)) {}
  int context_size() const override;
  int vocab_size() const override;
  GenerationOptions default_options() const override;
  std::vector<int> encode(const std::string& text, bool add_special_tokens) const override;
  std::string decode(const std::vector<int>& ids) const override;
  std::string render_chat(const nlohmann::ordered_json& messages,
                          const nlohmann::ordered_json& tools,
                          const nlohmann::ordered_json& template_kwargs) const override;
  TextResult generate(const TextRequest& request,
                      const std::function<bool(const TextChunk&)>& on_chunk) override;

 private:
  std::unique_ptr<Session> session_;
};

}  // namespace mlx_cpp::server
