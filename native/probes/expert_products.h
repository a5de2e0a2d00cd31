// Streaming speed of the products a decode step runs on its experts, at the row counts a batch gives
// one expert: the active kernel set's BF16 product (weights packed where the set packs them, fast
// precision, through the decoder's group driver) and each int8 kernel set the CPU has
// (native/cpu/quant_int8.h, in the same column chunks as its driver). Each streams one weight matrix,
// by default far larger than the caches, read once per pass. Reported as weight bytes and FLOPs per
// second, for the benchmark to divide by the read bandwidth and the product ceiling it measures.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/thread_pool.h"

namespace scriptorium {

struct ExpertProductOptions {
  int64_t weight_bytes = int64_t{256} << 20;      // bytes of each matrix as stored; far larger than any cache
  int64_t cols = 1280;                             // K: V1's hidden size
  int passes = 5;                                  // passes over the matrix per measurement; the best counts
  std::vector<int64_t> batches = {1, 2, 4, 6, 8, 12, 16};  // activation rows M

  void validate() const;  // throws std::invalid_argument naming the bad option
};

struct ExpertProductSpeed {
  std::string format;        // "bf16" or "int8"
  std::string kernels;       // the kernel set: "avx512bf16", ..., "avx512vnni", "avx512vnni fast" (8-bit activations), "avx512", "avx2"
  int64_t batch = 0;         // M
  double weight_gbps = 0;    // 1e9 bytes/s of weights (int8: values and scales), best pass
  double gflops = 0;         // 2·M·N·K per second of the same pass, 1e9
};

// The BF16 product, then every int8 set the CPU can run except the scalar reference; each batch size.
std::vector<ExpertProductSpeed> measure_expert_products(ThreadPool& pool, const ExpertProductOptions& options);

}  // namespace scriptorium
