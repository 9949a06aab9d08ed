#pragma once
// The running account of one render against its TemplateLimits: steps,
// nesting, wall time and the bytes of strings and lists built. The
// interpreter charges steps and nesting; the value operations, filters and
// methods charge bytes. They do not know which render they serve, so the
// render installs its budget for its thread while it runs
// (RenderBudget::Scope) and the charging functions below find it there;
// outside a render they charge nothing.
#include <chrono>
#include <cstddef>

#include "template/template_limits.h"

namespace mlx_cpp::jinja {

class RenderBudget {
 public:
  explicit RenderBudget(const TemplateLimits& limits);

  // One step (an expression evaluated or a statement run) that also
  // nests one level until the returned guard ends. Throws TemplateFailure
  // when the steps, the nesting or the time are spent.
  class Level {
   public:
    explicit Level(RenderBudget& budget);
    ~Level() { --budget_.nesting_; }
    Level(const Level&) = delete;
    Level& operator=(const Level&) = delete;

   private:
    RenderBudget& budget_;
  };

  // Counts `bytes` as built; throws once the total passes the limit.
  void charge(size_t bytes);
  // Throws, before anything is built, when `bytes` more would not fit.
  void ensure_room(size_t bytes) const;

  // Makes `budget` the current thread's while alive.
  class Scope {
   public:
    explicit Scope(RenderBudget& budget);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    RenderBudget* previous_;
  };

 private:
  [[noreturn]] void fail_bytes() const;

  TemplateLimits limits_;
  std::chrono::steady_clock::time_point deadline_;
  size_t steps_ = 0;
  int nesting_ = 0;
  size_t built_bytes_ = 0;
};

// Charges the render running on this thread, if any.
void charge_built_bytes(size_t bytes);
// Fails before building `bytes` that the current render could not afford.
void ensure_room_for(size_t bytes);
// count * each, saturating at SIZE_MAX, for sizes computed before building.
size_t bytes_times(size_t count, size_t each);

}  // namespace mlx_cpp::jinja
