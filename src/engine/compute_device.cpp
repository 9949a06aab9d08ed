#include "engine/compute_device.h"

#include <mlx/backend/cuda/cuda.h>
#include <mlx/device.h>
#include <mlx/memory.h>

#include <cstdio>
#include <fstream>
#include <variant>

#include "engine/memory_policy.h"
#include "io/error.h"
#include "runtime/stop_signals_blocked.h"

namespace mlx_cpp {
namespace mx = mlx::core;

namespace {

int visible_gpus() {
  StopSignalsBlocked blocked;  // asking starts the CUDA driver and its threads
  try {
    return mx::device_count(mx::Device::gpu);
  } catch (const std::exception&) {
    return 0;  // a backend without GPUs, or a driver that does not answer
  }
}

// A /proc/meminfo field in bytes (0 where it cannot be read).
std::size_t meminfo_bytes(const std::string& field) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  std::size_t kilobytes = 0;
  while (meminfo >> key >> kilobytes >> unit)
    if (key == field + ":") return kilobytes * 1024;
  return 0;
}

std::string info_text(const mx::Device& device, const std::string& key) {
  const auto& info = mx::device_info(device);
  const auto found = info.find(key);
  if (found == info.end()) return "";
  if (const auto* text = std::get_if<std::string>(&found->second)) return *text;
  return std::to_string(std::get<size_t>(found->second));
}

}  // namespace

ComputeDevice parse_compute_device(const std::string& name) {
  if (name.empty() || name == "auto") return ComputeDevice::automatic;
  if (name == "cpu") return ComputeDevice::cpu;
  if (name == "gpu") return ComputeDevice::gpu;
  throw Error("--device is gpu, cpu or auto, not '" + name + "'");
}

// MLX's CUDA build answers true whether or not a GPU is present; its CPU
// build, false. Asked at run time, the same objects serve both builds.
bool build_has_gpu() {
  return mx::cu::is_available();
}

void select_compute_device(ComputeDevice choice) {
  if (choice == ComputeDevice::gpu && !build_has_gpu())
    throw Error(
        "--device gpu: this mlx-cpp is built against MLX's CPU backend; build it for an NVIDIA "
        "GPU with scripts/setup-cuda (docs/gpu.md)");
  const bool gpu_present = build_has_gpu() && visible_gpus() > 0;
  // MLX's CUDA build allocates every array, the CPU's too, through the
  // CUDA driver: without a GPU it cannot run at all.
  if (build_has_gpu() && !gpu_present)
    throw Error(
        "this mlx-cpp is built against MLX's CUDA backend, which needs an NVIDIA GPU (even for "
        "--device cpu), and none is visible: no driver, no device, or CUDA_VISIBLE_DEVICES hides "
        "them. The CPU build (scripts/setup) runs without one");
  const bool use_gpu = choice != ComputeDevice::cpu && gpu_present;
  mx::set_default_device(use_gpu ? mx::Device(mx::Device::gpu) : mx::Device(mx::Device::cpu));
  apply_memory_policy();
}

bool computing_on_gpu() {
  return mx::default_device() == mx::Device::gpu;
}

std::size_t usable_memory_bytes() {
  return computing_on_gpu() ? mx::get_memory_limit() : meminfo_bytes("MemTotal");
}

std::size_t free_memory_bytes() {
  return computing_on_gpu() ? mx::get_memory_limit() : meminfo_bytes("MemAvailable");
}

std::string compute_device_description() {
  const auto& device = mx::default_device();
  if (device == mx::Device::cpu) return "cpu";
  std::string text = "gpu " + std::to_string(device.index);
  try {
    const auto name = info_text(device, "device_name");
    const auto major = info_text(device, "compute_capability_major");
    const auto minor = info_text(device, "compute_capability_minor");
    const auto memory = info_text(device, "total_memory");
    if (!name.empty()) text += ": " + name;
    if (!major.empty()) text += " (sm_" + major + minor;
    if (!memory.empty()) {
      char gigabytes[32];
      std::snprintf(gigabytes, sizeof gigabytes, ", %.1f GB", std::stod(memory) / 1e9);
      text += gigabytes;
    }
    if (!major.empty()) text += ")";
  } catch (const std::exception&) {
    // The description is informative only; the device is in use regardless.
  }
  return text;
}

}  // namespace mlx_cpp
