// Int8 product speed for the benchmarks (see int8_products.h).
#include "probes/int8_products.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "cpu/quant_int8.h"

namespace scriptorium {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kColumnGrain = 16;  // as matmul_int8_group

}  // namespace

void Int8ProductOptions::validate() const {
  if (cols < 64 || cols > (int64_t{1} << 16)) throw std::invalid_argument("int8 products: cols must be between 64 and 65536");
  if (weight_bytes < (cols + 3) / 4 * 4 * kColumnGrain) throw std::invalid_argument("int8 products: the matrix must hold at least 16 rows");
  if (passes < 1 || passes > 1000) throw std::invalid_argument("int8 products: passes must be between 1 and 1000");
  if (batches.empty()) throw std::invalid_argument("int8 products: no batch size");
  for (int64_t m : batches)
    if (m < 1 || m > 256) throw std::invalid_argument("int8 products: batch sizes must be between 1 and 256");
}

std::vector<Int8ProductSpeed> measure_int8_products(ThreadPool& pool, const Int8ProductOptions& options) {
  options.validate();
  // Whole tiles of 16 rows, each row padded to a multiple of 4 values, so that one buffer holds the
  // matrix in either layout.
  const int64_t K = options.cols, Kp = (K + 3) / 4 * 4, N = options.weight_bytes / Kp / 16 * 16;
  const int64_t groups = (K + kInt8Group - 1) / kInt8Group;
  // Speed does not depend on the values: a fixed pattern, spread over the pool's threads.
  std::vector<int8_t> q(static_cast<size_t>(N * Kp));
  std::vector<float> scales(static_cast<size_t>(N * groups), 1.f / 127);
  pool.parallel_for(N, kColumnGrain, [&](int64_t n0, int64_t n1) {
    for (int64_t i = n0 * Kp; i < n1 * Kp; ++i) q[i] = static_cast<int8_t>(i * 37 % 255 - 127);
  });
  const int64_t max_batch = *std::max_element(options.batches.begin(), options.batches.end());
  std::vector<float> X(static_cast<size_t>(max_batch * K));
  for (size_t i = 0; i < X.size(); ++i) X[i] = static_cast<float>(static_cast<int64_t>(i * 53 % 13) - 6) / 8.f;
  std::vector<float> Y(static_cast<size_t>(max_batch * N));
  const double bytes = static_cast<double>(N * K) + static_cast<double>(scales.size() * sizeof(float));

  std::vector<Int8ProductSpeed> speeds;
  for (const char* name : {"avx512vnni", "avx512", "avx2"}) {
    const QuantKernelSet* set = quant_kernels_by_name(name);
    if (set == nullptr) continue;
    const Int8Weights w{q.data(), scales.data(), K, kInt8Group, groups, set->layout};
    for (int64_t M : options.batches) {
      double best = 0;
      for (int pass = 0; pass < options.passes; ++pass) {
        const auto start = Clock::now();
        pool.parallel_for(N, kColumnGrain, [&](int64_t n0, int64_t n1) {
          set->gemm_int8(X.data(), K, w, Y.data(), N, M, n0, n1);
        });
        best = std::max(best, bytes / std::chrono::duration<double>(Clock::now() - start).count() / 1e9);
      }
      speeds.push_back({name, M, best});
    }
  }
  return speeds;
}

}  // namespace scriptorium
