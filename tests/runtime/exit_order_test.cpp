// A program may return from main while MLX still has work queued (an
// async_eval whose result nobody waits for, or the buffers of a finished step
// not yet freed). The exit-order guard (src/runtime/mlx_exit_order.cpp) must
// drain that work before MLX's allocator is destroyed; without it the exit
// aborts with a corrupted heap or crashes.
#include <gtest/gtest.h>

#include <cstdlib>

#include <mlx/mlx.h>

namespace mx = mlx::core;

namespace {

// Queues many steps with fresh temporaries, so exit() would find the stream
// thread busy allocating and freeing.
void queue_work_and_exit() {
  auto x = mx::random::normal({64, 64});
  for (int i = 0; i < 2000; ++i) x = mx::tanh(mx::matmul(x, x) * 0.01f + 1.0f);
  mx::async_eval({x});
  std::exit(0);
}

}  // namespace

TEST(ExitOrder, ExitWithQueuedWorkIsClean) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (int run = 0; run < 10; ++run) {
    EXPECT_EXIT(queue_work_and_exit(), testing::ExitedWithCode(0), "") << "run " << run;
  }
}
