// A chat template from a model file: parsed, then rendered with a small
// conversation. Every failure must be an Error; the budget is small so each
// input runs in milliseconds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/error.h"
#include "template/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  mlx_cpp::TemplateLimits limits;
  limits.max_steps = 200000;
  limits.max_built_bytes = 8u << 20;
  limits.max_output_bytes = 1u << 20;
  limits.max_loop_iterations = 100000;
  static const nlohmann::ordered_json context = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}},
        {{"role", "user"}, {"content", "Hi"}},
        {{"role", "assistant"},
         {"content", ""},
         {"tool_calls",
          {{{"type", "function"}, {"function", {{"name", "f"}, {"arguments", {{"x", 1}}}}}}}}},
        {{"role", "tool"}, {"content", "1"}}}},
      {"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {}}}}}}},
      {"add_generation_prompt", true},
      {"bos_token", "<s>"},
      {"eos_token", "</s>"}};
  try {
    mlx_cpp::ChatTemplate(source, limits).render(context);
  } catch (const mlx_cpp::Error&) {
  }
  return 0;
}
