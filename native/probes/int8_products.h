// Streaming speed of each int8 kernel set the CPU has (native/cpu/quant_int8.h) at decode's batch
// sizes: one weight matrix far larger than the caches, read once per pass by every thread, as a
// decode step reads its experts. Reported as weight bytes per second, for the benchmark to divide
// by the read bandwidth it measures.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/thread_pool.h"

namespace scriptorium {

struct Int8ProductOptions {
  int64_t weight_bytes = int64_t{256} << 20;  // int8 values of the matrix; far larger than any cache
  int64_t cols = 1280;                         // K: V1's hidden size
  int passes = 5;                              // passes over the matrix per measurement; the best counts
  std::vector<int64_t> batches = {1, 8};       // activation rows M

  void validate() const;  // throws std::invalid_argument naming the bad option
};

struct Int8ProductSpeed {
  std::string kernels;       // the int8 set: "avx512vnni", "avx512", "avx2", "scalar"
  int64_t batch = 0;         // M
  double weight_gbps = 0;    // 1e9 bytes/s of int8 values and scales, best pass
};

// Every set the CPU can run except the scalar reference, each batch size.
std::vector<Int8ProductSpeed> measure_int8_products(ThreadPool& pool, const Int8ProductOptions& options);

}  // namespace scriptorium
