#pragma once
// Which processor MLX computes on. A build against MLX's CUDA backend runs on
// the GPU when the machine shows one; `--device` chooses explicitly, and a
// choice the build or the machine cannot honour is a clear error, never a
// crash at the first kernel launch.
#include <cstddef>
#include <string>

namespace mlx_cpp {

enum class ComputeDevice { automatic, cpu, gpu };

// "auto", "cpu" or "gpu"; anything else throws Error.
ComputeDevice parse_compute_device(const std::string& name);

// True when this binary was built against a GPU backend of MLX.
bool build_has_gpu();

// Makes the choice MLX's default device (for every thread) and applies the
// memory policy for it. automatic takes the GPU when there is one.
void select_compute_device(ComputeDevice choice);

// True when MLX's default device is the GPU.
bool computing_on_gpu();

// The memory the device in use offers: on the GPU, MLX's limit (derived
// from the card's memory); on the CPU, the machine's physical memory (0 where
// it cannot be read).
std::size_t usable_memory_bytes();

// The memory free on the device in use before a model loads: on the GPU,
// MLX's whole limit (MLX holds nothing yet); on the CPU, the machine's
// available memory.
std::size_t free_memory_bytes();

// One line naming the device in use, e.g. "gpu 0: NVIDIA H200 (sm_90, 150.0
// GB)" or "cpu".
std::string compute_device_description();

}  // namespace mlx_cpp
