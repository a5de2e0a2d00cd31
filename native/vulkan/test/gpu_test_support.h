// What the Vulkan backend's test programs share: seeded random operands, the tolerance comparison
// against a CPU result, and the device with its transfer, batch and uploads/downloads.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "vulkan/buffers.h"
#include "vulkan/pipelines.h"
#include "vulkan/shader_ops.h"

namespace scriptorium_gpu_test {

using scriptorium::bf16_t;
namespace vk = scriptorium::vk;

inline constexpr double kTol = 2e-5;  // |gpu - cpu| <= kTol * max |cpu|

inline std::mt19937 g_rng(2024);

inline std::vector<float> random_f32(size_t n, float scale = 1.f) {
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(g_rng);
  return v;
}

inline std::vector<bf16_t> random_bf16(size_t n, float scale = 1.f) {
  std::vector<bf16_t> v(n);
  for (bf16_t& x : v) x = scriptorium::f32_to_bf16(std::normal_distribution<float>(0.f, scale)(g_rng));
  return v;
}

// "" when every |got - want| <= tol * max |want| (and both have the same length).
inline std::string compare(const std::vector<float>& got, const std::vector<float>& want, double tol = kTol) {
  if (got.size() != want.size()) return "got " + std::to_string(got.size()) + " values, want " + std::to_string(want.size());
  double largest = 0, worst = 0;
  size_t at = 0;
  for (float w : want) largest = std::max(largest, std::fabs(static_cast<double>(w)));
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(e <= worst)) worst = e, at = i;
  }
  if (worst <= tol * std::max(largest, 1e-30)) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "element %zu: got %g, want %g (largest %g)", at, got[at], want[at], largest);
  return buf;
}

struct Gpu {
  std::unique_ptr<vk::Device> device;
  std::unique_ptr<vk::Transfer> transfer;
  std::unique_ptr<vk::CommandBatch> batch;
  std::unique_ptr<vk::ShaderOps> ops;

  template <typename T>
  std::unique_ptr<vk::Buffer> upload(const std::vector<T>& host) {
    auto buffer = std::make_unique<vk::Buffer>(*device, host.size() * sizeof(T));
    transfer->upload(*buffer, 0, host.data(), host.size() * sizeof(T));
    return buffer;
  }
  template <typename T>
  std::vector<T> download(const vk::Buffer& buffer, size_t n, size_t offset = 0) {
    std::vector<T> host(n);
    transfer->download(buffer, offset * sizeof(T), host.data(), n * sizeof(T));
    return host;
  }
};

// Opens the first Vulkan device into gpu. Without one it prints why and returns false with the exit
// status to end with: 0 (skipped), or 1 when SCRIPTORIUM_REQUIRE_VULKAN=1 makes that a failure.
inline bool open_test_device(Gpu& gpu, const char* what, int& exit_status) {
  try {
    auto instance = std::make_shared<vk::Instance>();
    gpu.device = std::make_unique<vk::Device>(instance, 0);
  } catch (const std::exception& e) {
    const char* require = std::getenv("SCRIPTORIUM_REQUIRE_VULKAN");
    const bool required = require && *require == '1';
    std::printf("%s %s: no Vulkan device: %s\n", required ? "FAIL" : "skip", what, e.what());
    exit_status = required ? 1 : 0;
    return false;
  }
  std::printf("device: %s\n", gpu.device->info().name.c_str());
  gpu.transfer = std::make_unique<vk::Transfer>(*gpu.device);
  gpu.batch = std::make_unique<vk::CommandBatch>(*gpu.device);
  gpu.ops = std::make_unique<vk::ShaderOps>(*gpu.device);
  return true;
}

}  // namespace scriptorium_gpu_test
