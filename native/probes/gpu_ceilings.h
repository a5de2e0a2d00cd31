// A Vulkan device's ceilings, measured by shaders, for the GPU benchmark to compare the decoder with:
// the memory read bandwidth of a streaming read shader, and the throughput of each matrix-product
// shader path the device runs (ShaderOps::matmul_bf16 on square products).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace scriptorium {

struct GpuCeilingOptions {
  int device = 0;                           // gpu:N
  int64_t buffer_bytes = int64_t{1} << 30;  // read buffer (capped at what the device can bind)
  int passes = 5;                           // timed read rounds; the best one counts
  int matmul_side = 2048;                   // M = N = K of the timed products
  double seconds = 0.5;                     // wall time of each matmul measurement (best round counts)

  void validate() const;  // throws std::invalid_argument naming the bad option
};

struct GpuMatmulCeiling {
  std::string path;  // "portable", "cooperative-matrix"
  double gflops = 0;
};

struct GpuCeilings {
  std::string device;  // its name
  int64_t buffer_bytes = 0;
  double read_gbps = 0;  // 1e9 bytes/s, best round
  std::vector<GpuMatmulCeiling> matmul;
};

// Opens the device, measures, closes it. Throws VulkanError when the device cannot be used.
GpuCeilings measure_gpu_ceilings(const GpuCeilingOptions& options);

}  // namespace scriptorium
