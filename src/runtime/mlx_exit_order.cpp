// Makes every program that uses MLX finish the work still queued on MLX's
// CPU stream before MLX's own statics are destroyed.
//
// mx::eval returns as soon as its outputs are ready, but the stream thread
// then destroys the finished task, which frees the step's temporary buffers
// through MLX's allocator. When main returns in that window, exit() destroys
// the allocator while the stream thread is still freeing into it, and glibc
// aborts with "corrupted double-linked list" (seen at exit of `mlx-cpp bench`
// about one run in five). Draining the stream from an exit handler closes the
// window: the scheduler runs tasks in order and destroys each before taking
// the next, so the drain's marker task runs only after all earlier ones are
// gone.
//
// Exit handlers and static destructors run in reverse order of registration,
// so the statics the drain needs (allocator, scheduler, stream registry) are
// created first, here, and the handler is registered after them. This file is
// compiled once as an object library and linked into every executable that
// links the kernels layer (see src/CMakeLists.txt), so no call site can forget
// it.
#include <mlx/allocator.h>
#include <mlx/backend/cuda/cuda.h>
#include <mlx/device.h>
#include <mlx/scheduler.h>
#include <mlx/stream.h>
#include <mlx/utils.h>

#include <cstdlib>

#include "runtime/stop_signals_blocked.h"

namespace mx = mlx::core;

namespace {

// Every CPU stream, not only this thread's default one: the server evaluates
// on its engine thread's stream. The registry of streams is a plain static
// (created below, before the handler), unlike the thread-local default
// streams, which exit() destroys before it runs the exit handlers.
void drain_cpu_streams() {
  try {
    for (const auto& stream : mx::get_streams()) {
      if (stream.device == mx::Device::cpu) mx::synchronize(stream);
    }
  } catch (...) {
    // A stream error was already reported by the eval that caused it; at exit
    // there is nobody left to tell.
  }
}

// Creates no stream and so no thread: a thread started before main would
// miss the signal mask the server sets up (SIGTERM would kill it).
//
// MLX's CUDA build allocates through the CUDA driver, for the CPU too: with
// no GPU visible its allocator cannot be made, nothing of MLX can run, and
// main() says so (engine/compute_device.cpp) instead of aborting here. Where
// a GPU is, the driver's threads start here and must not take stop signals.
const bool kDrainRegistered = [] {
  mlx_cpp::StopSignalsBlocked blocked;
  if (mx::cu::is_available() && mx::device_count(mx::Device::gpu) == 0) return false;
  mx::allocator::allocator();
  mx::scheduler::scheduler();
  mx::get_streams();
  return std::atexit(drain_cpu_streams) == 0;
}();

}  // namespace
