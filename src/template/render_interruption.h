#pragma once
// A way for whoever asked for a render to stop it early: a server whose
// client hung up has no use for the prompt. While a RenderInterruption is
// alive on a thread, the renders on that thread ask it whenever they read
// their clock (every few thousand steps) and end with TemplateFailure,
// carrying its reason, once it says stop. The interpreter knows nothing of
// connections; the asker supplies the question.
#include <functional>
#include <optional>
#include <string>

namespace mlx_cpp::jinja {

class RenderInterruption {
 public:
  RenderInterruption(std::function<bool()> should_stop, std::string reason);
  ~RenderInterruption();
  RenderInterruption(const RenderInterruption&) = delete;
  RenderInterruption& operator=(const RenderInterruption&) = delete;

 private:
  friend std::optional<std::string> interruption_of_this_thread();
  std::function<bool()> should_stop_;
  std::string reason_;
  RenderInterruption* previous_;
};

// The reason to stop the render running on this thread, or nullopt when
// nothing asks it to (none installed, or each one installed says go on).
std::optional<std::string> interruption_of_this_thread();

}  // namespace mlx_cpp::jinja
