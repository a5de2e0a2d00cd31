// The machine's ceilings, for benchmarks to compare the engine with: streaming read bandwidth of
// main memory, the GEMM throughput the active kernel set reaches on cache-resident blocks, and the
// instruction-throughput peak of the multiply-add those kernels are built on. Every figure uses all
// threads of the given pool at once.
#pragma once
#include <cstdint>
#include <string>

#include "common/thread_pool.h"

namespace scriptorium {

struct CeilingOptions {
  int64_t buffer_bytes = int64_t{1} << 30;  // read-bandwidth buffer: far larger than any cache
  int passes = 5;                            // read passes over the buffer; the best one counts
  double seconds = 0.5;                      // wall time per compute measurement (best round counts)

  void validate() const;  // throws std::invalid_argument naming the bad option
};

struct Ceilings {
  std::string kernels;    // the active kernel set measured
  int threads = 0;
  std::string read_simd;  // vector width of the read loop: "avx512", "avx2", "sse2" or "neon"
  double read_gbps = 0;   // 1e9 bytes/s, best pass

  // Through the active set's gemm_f32 / gemm_bf16 / gemm_bf16_fast (fast precision), each thread on
  // its own blocks in L2; the BF16 ones take the faster of stored and packed weights (the packed
  // products, where the set has them).
  double gemm_f32_gflops = 0, gemm_bf16_gflops = 0, gemm_bf16_fast_gflops = 0;

  // Instruction-throughput peaks: independent chains of the set's F32 FMA (its vector width) and of
  // the instruction its gemm_bf16 multiplies with, counted as the useful FLOPs it yields (avx512bf16:
  // two VDPBF16PS per multiply-add, as activations are split into two BF16 halves). 0 for scalar.
  double peak_f32_gflops = 0, peak_bf16_gflops = 0;
  double clock_ghz = 0;  // one thread, from a chain of dependent adds (0 when not measurable)
};

Ceilings measure_ceilings(ThreadPool& pool, const CeilingOptions& options);

}  // namespace scriptorium
