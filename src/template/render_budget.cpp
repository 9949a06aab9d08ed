#include "template/render_budget.h"

#include <limits>
#include <string>

#include "template/render_interruption.h"
#include "template/template_error.h"

namespace mlx_cpp::jinja {
namespace {

thread_local RenderBudget* current_budget = nullptr;

// Reading the clock on every step would cost more than most steps.
constexpr size_t kStepsPerClockCheck = 4096;

}  // namespace

RenderBudget::RenderBudget(const TemplateLimits& limits)
    : limits_(limits),
      deadline_(std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(limits.max_seconds))) {}

RenderBudget::Level::Level(RenderBudget& budget) : budget_(budget) {
  if (++budget_.nesting_ > budget_.limits_.max_nesting) {
    --budget_.nesting_;
    throw TemplateFailure("template nests deeper than " +
                          std::to_string(budget_.limits_.max_nesting) + " levels while rendering");
  }
  if (++budget_.steps_ > budget_.limits_.max_steps) {
    --budget_.nesting_;
    throw TemplateFailure("template takes more than " + std::to_string(budget_.limits_.max_steps) +
                          " steps");
  }
  if (budget_.steps_ % kStepsPerClockCheck == 0) {
    if (std::chrono::steady_clock::now() > budget_.deadline_) {
      --budget_.nesting_;
      throw TemplateFailure("template takes longer than " +
                            std::to_string(static_cast<int>(budget_.limits_.max_seconds)) +
                            " seconds");
    }
    if (auto reason = interruption_of_this_thread()) {
      --budget_.nesting_;
      throw TemplateFailure("the render was stopped: " + *reason);
    }
  }
}

void RenderBudget::charge(size_t bytes) {
  if (bytes > limits_.max_built_bytes - built_bytes_) fail_bytes();
  built_bytes_ += bytes;
}

void RenderBudget::ensure_room(size_t bytes) const {
  if (bytes > limits_.max_built_bytes - built_bytes_) fail_bytes();
}

void RenderBudget::fail_bytes() const {
  throw TemplateFailure("template builds more than " + std::to_string(limits_.max_built_bytes) +
                        " bytes of strings and lists");
}

RenderBudget::Scope::Scope(RenderBudget& budget) : previous_(current_budget) {
  current_budget = &budget;
}

RenderBudget::Scope::~Scope() {
  current_budget = previous_;
}

void charge_built_bytes(size_t bytes) {
  if (current_budget) current_budget->charge(bytes);
}

void ensure_room_for(size_t bytes) {
  if (current_budget) current_budget->ensure_room(bytes);
}

size_t bytes_times(size_t count, size_t each) {
  size_t product = 0;
  if (__builtin_mul_overflow(count, each, &product)) return std::numeric_limits<size_t>::max();
  return product;
}

}  // namespace mlx_cpp::jinja
