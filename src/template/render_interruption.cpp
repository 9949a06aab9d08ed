#include "template/render_interruption.h"

namespace mlx_cpp::jinja {
namespace {

thread_local RenderInterruption* current_interruption = nullptr;

}  // namespace

RenderInterruption::RenderInterruption(std::function<bool()> should_stop, std::string reason)
    : should_stop_(std::move(should_stop)),
      reason_(std::move(reason)),
      previous_(current_interruption) {
  current_interruption = this;
}

RenderInterruption::~RenderInterruption() {
  current_interruption = previous_;
}

std::optional<std::string> interruption_of_this_thread() {
  for (auto* interruption = current_interruption; interruption;
       interruption = interruption->previous_)
    if (interruption->should_stop_ && interruption->should_stop_()) return interruption->reason_;
  return std::nullopt;
}

}  // namespace mlx_cpp::jinja
