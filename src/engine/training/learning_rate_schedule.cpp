#include "engine/training/learning_rate_schedule.h"

#include <mlx/ops.h>

#include <cmath>
#include <cstdint>

#include "io/error.h"

namespace mlx_cpp {
namespace mx = mlx::core;

namespace {

// mlx.optimizers keeps its step count as a uint64 array, and each schedule
// mixes it with Python numbers, which MLX takes as float32 (or as the
// count's own type for integers): the same promotions here.
mx::array count(std::uint64_t value) {
  return mx::array(value, mx::uint64);
}
mx::array f32(double value) {
  return mx::array(static_cast<float>(value));
}

mx::array linear(double init, double end, double steps, const mx::array& step) {
  auto clamped = mx::minimum(step, count(static_cast<std::uint64_t>(steps)));
  return mx::add(mx::multiply(clamped, f32((end - init) / steps)), f32(init));
}

mx::array named(const std::string& name, const std::vector<double>& a, const mx::array& step) {
  if (name == "cosine_decay") {
    const double init = a[0], steps = a[1], end = a.size() > 2 ? a[2] : 0.0;
    auto clamped = mx::minimum(step, count(static_cast<std::uint64_t>(steps)));
    auto decay = mx::multiply(f32(0.5),
                              mx::add(f32(1.0), mx::cos(mx::multiply(f32(M_PI / steps), clamped))));
    return mx::add(f32(end), mx::multiply(decay, f32(init - end)));
  }
  if (name == "linear_schedule") return linear(a[0], a[1], a[2], step);
  if (name == "exponential_decay") return mx::multiply(f32(a[0]), mx::power(f32(a[1]), step));
  // step_decay
  auto stage = mx::floor_divide(step, count(static_cast<std::uint64_t>(a[2])));
  return mx::multiply(f32(a[0]), mx::power(f32(a[1]), stage));
}

}  // namespace

void check_schedule(const LearningRateSchedule& schedule) {
  const auto& name = schedule.name;
  std::size_t least = 0, most = 0;
  int steps_at = -1;  // the argument that counts steps
  if (name == "cosine_decay") {
    least = 2, most = 3, steps_at = 1;
  } else if (name == "linear_schedule") {
    least = most = 3, steps_at = 2;
  } else if (name == "exponential_decay") {
    least = most = 2;
  } else if (name == "step_decay") {
    least = most = 3, steps_at = 2;
  } else {
    throw Error("lr schedule " + name +
                " is not offered (cosine_decay, linear_schedule, exponential_decay, step_decay)");
  }
  const auto given = schedule.arguments.size();
  if (given < least || given > most)
    throw Error("lr schedule " + name + " takes " + std::to_string(least) +
                (least == most ? "" : " or " + std::to_string(most)) + " arguments, not " +
                std::to_string(given));
  if (steps_at >= 0) {
    const double steps = schedule.arguments[steps_at];
    if (!(steps >= 1) || steps != std::floor(steps))
      throw Error("lr schedule " + name + ": its step count must be a whole number of at least 1");
  }
  if (schedule.warmup < 0) throw Error("lr schedule: warmup must not be negative");
}

mx::array learning_rate_at(const LearningRateSchedule& schedule, long long step) {
  const auto at = static_cast<std::uint64_t>(step);
  if (schedule.warmup > 0) {
    // join_schedules([warmup, schedule], [warmup + 1])
    const auto boundary = static_cast<std::uint64_t>(schedule.warmup) + 1;
    if (at < boundary)
      return linear(schedule.warmup_init, schedule.arguments[0], schedule.warmup, count(at));
    return named(schedule.name, schedule.arguments, count(at - boundary));
  }
  return named(schedule.name, schedule.arguments, count(at));
}

}  // namespace mlx_cpp
