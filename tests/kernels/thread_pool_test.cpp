// The kernels' thread pool: every task runs exactly once, resizing right
// after start-up does not lose workers, errors propagate, nested calls run
// inline.
#include "kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace mlx_cpp::kernels {
namespace {

TEST(ThreadPool, RunsEveryTaskOnceAcrossManyJobs) {
  ThreadPool pool(3);
  for (int job = 0; job < 2000; ++job) {
    int count = 1 + job % 37;
    std::vector<std::atomic<int>> runs(count);
    pool.parallel_for(count, [&](int i) { runs[i].fetch_add(1); });
    for (int i = 0; i < count; ++i) ASSERT_EQ(runs[i].load(), 1) << "job " << job << " task " << i;
  }
}

TEST(ThreadPool, ResizesImmediatelyAfterStart) {
  for (int round = 0; round < 50; ++round) {
    ThreadPool pool(2);
    pool.set_thread_count(1 + round % 4);
    EXPECT_EQ(pool.thread_count(), 1 + round % 4);
    std::atomic<int> sum{0};
    pool.parallel_for(100, [&](int i) { sum.fetch_add(i); });
    EXPECT_EQ(sum.load(), 4950);
  }
}

TEST(ThreadPool, RethrowsTheFirstTaskError) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(16,
                                 [](int i) {
                                   if (i == 5) throw std::runtime_error("task 5");
                                 }),
               std::runtime_error);
  std::atomic<int> after{0};
  pool.parallel_for(8, [&](int) { after.fetch_add(1); });
  EXPECT_EQ(after.load(), 8);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.parallel_for(4, [&](int) { pool.parallel_for(3, [&](int) { inner.fetch_add(1); }); });
  EXPECT_EQ(inner.load(), 12);
}

TEST(SplitRange, CoversTheRangeInAlignedPieces) {
  int covered = 0;
  for (int part = 0; part < 5; ++part) {
    Range r = split_range(103, 5, part, 8);
    EXPECT_EQ(r.begin, covered);
    EXPECT_TRUE(r.begin % 8 == 0);
    covered = r.end;
  }
  EXPECT_EQ(covered, 103);
}

}  // namespace
}  // namespace mlx_cpp::kernels
