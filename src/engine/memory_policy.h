#pragma once
// Process-wide memory settings of the runtime, applied once at start-up.

namespace mlx_cpp {

// MLX keeps freed buffers in its own cache for reuse. On the CPU, malloc
// reuses freed memory as well, so that cache only adds resident memory (on
// SmolLM2-135M, 33 MiB after a 512-token prompt) and no speed: it is turned
// off when the default device is the CPU.
void apply_memory_policy();

}  // namespace mlx_cpp
