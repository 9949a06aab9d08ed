#pragma once
// Chat templates: Jinja2 templates rendered the way Hugging Face transformers
// renders them (`apply_chat_template`): jinja2 with trim_blocks and
// lstrip_blocks, transformers' tojson / raise_exception / strftime_now, loop
// controls, and its message preprocessing (keys whose value is null are
// dropped; reasoning under "reasoning_content", "thinking" or "reasoning" is
// copied to "thinking" and "reasoning_content").
//
// Every failure (syntax, undefined call, raise_exception, runaway template)
// throws mlx_cpp::Error "template error at line N: ...".
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "template/template_limits.h"

namespace mlx_cpp {

namespace jinja {
struct TemplateTree;
}

// A template parsed once and rendered many times; rendering is const and
// safe to run from several threads at once.
class ChatTemplate {
 public:
  // Throws Error on a syntax error, naming the line.
  explicit ChatTemplate(const std::string& source, TemplateLimits limits = {});
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // Renders with `context` as the template's variables. The chat keys are
  // prepared as transformers prepares them: "messages" (normalized, see
  // above), "tools" and "documents" (null when absent) and
  // "add_generation_prompt" (false when absent); other keys (bos_token,
  // eos_token, enable_thinking, ...) pass through unchanged.
  std::string render(const nlohmann::ordered_json& context) const;

  // Renders with exactly the given variables, no chat preprocessing.
  std::string render_raw(const nlohmann::ordered_json& variables) const;

 private:
  std::unique_ptr<jinja::TemplateTree> tree_;
  TemplateLimits limits_;
};

// One-shot parse and render (see ChatTemplate::render).
std::string render_chat_template(const std::string& source, const nlohmann::ordered_json& context);

// transformers' message preprocessing on its own, for callers that build
// the context themselves.
nlohmann::ordered_json normalize_chat_messages(const nlohmann::ordered_json& messages);

}  // namespace mlx_cpp
