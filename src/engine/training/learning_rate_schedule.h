#pragma once
// mlx-lm's lr_schedule: one of mlx.optimizers' schedules by name with its
// arguments as mlx-lm's config lists them (the first is the initial rate),
// optionally behind a linear warmup from warmup_init (mlx-lm's
// build_schedule joins the two at warmup + 1). Evaluated with MLX's
// arithmetic and dtypes at the optimizer's step count (0 at the first
// update), so the rates are mlx-lm's to the bit.
#include <mlx/array.h>

#include <string>
#include <vector>

namespace mlx_cpp {

struct LearningRateSchedule {
  // cosine_decay (init, decay_steps[, end]), linear_schedule (init, end,
  // steps), exponential_decay (init, decay_rate), step_decay (init,
  // decay_rate, step_size).
  std::string name;
  std::vector<double> arguments;
  int warmup = 0;
  double warmup_init = 0.0;
};

// Throws Error naming the problem: an unknown schedule, a wrong number of
// arguments, a step count below 1, a negative warmup.
void check_schedule(const LearningRateSchedule& schedule);

// The rate (a float32 scalar) at optimizer step `step`.
mlx::core::array learning_rate_at(const LearningRateSchedule& schedule, long long step);

}  // namespace mlx_cpp
