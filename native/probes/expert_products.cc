// Expert product speed for the benchmarks (see expert_products.h).
#include "probes/expert_products.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>

#include "common/float16.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"
#include "cpu/quant_int8.h"

namespace scriptorium {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kColumnGrain = 16;  // as matmul_int8_group

/* the best of `passes` runs of `product` over a matrix of `bytes`, as an ExpertProductSpeed */
ExpertProductSpeed best_pass(const char* format, const std::string& kernels, int64_t M, int64_t N, int64_t K,
                             double bytes, int passes, const std::function<void()>& product) {
  double seconds = 0;
  for (int pass = 0; pass < passes; ++pass) {
    const auto start = Clock::now();
    product();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (pass == 0 || s < seconds) seconds = s;
  }
  return {format, kernels, M, bytes / seconds / 1e9, 2.0 * static_cast<double>(M * N) * static_cast<double>(K) / seconds / 1e9};
}

}  // namespace

void ExpertProductOptions::validate() const {
  if (cols < 64 || cols > (int64_t{1} << 16)) throw std::invalid_argument("expert products: cols must be between 64 and 65536");
  if (weight_bytes < 2 * cols * kPanelColumns)
    throw std::invalid_argument("expert products: the matrix must hold at least " + std::to_string(kPanelColumns) + " BF16 rows");
  if (passes < 1 || passes > 1000) throw std::invalid_argument("expert products: passes must be between 1 and 1000");
  if (batches.empty()) throw std::invalid_argument("expert products: no batch size");
  for (int64_t m : batches)
    if (m < 1 || m > 256) throw std::invalid_argument("expert products: batch sizes must be integers between 1 and 256");
}

std::vector<ExpertProductSpeed> measure_expert_products(ThreadPool& pool, const ExpertProductOptions& options) {
  options.validate();
  const int64_t K = options.cols;
  const int64_t max_batch = *std::max_element(options.batches.begin(), options.batches.end());
  // Speed does not depend on the values: fixed patterns, written by the pool's threads.
  std::vector<float> X(static_cast<size_t>(max_batch * K));
  for (size_t i = 0; i < X.size(); ++i) X[i] = static_cast<float>(static_cast<int64_t>(i * 53 % 13) - 6) / 8.f;
  std::vector<ExpertProductSpeed> speeds;

  {
    // BF16 rows of whole panels; packed once where the set multiplies packed weights, as the decoder's are.
    const int64_t N = options.weight_bytes / (2 * K) / kPanelColumns * kPanelColumns;
    std::vector<bf16_t> rows(static_cast<size_t>(N * K));
    pool.parallel_for(N, kPanelColumns, [&](int64_t n0, int64_t n1) {
      for (int64_t i = n0 * K; i < n1 * K; ++i) rows[i] = f32_to_bf16(static_cast<float>(i * 37 % 255 - 127) / 128.f);
    });
    Bf16Weight w;
    const bool packed = active_kernels().gemm_bf16_packed != nullptr;
    if (packed) {
      w.packed = PackedBf16(rows.data(), N, K);
      std::vector<bf16_t>().swap(rows);
    } else {
      w.rows = rows.data();
    }
    std::vector<float> Y(static_cast<size_t>(max_batch * N));
    const std::string kernels = std::string(active_kernels().name) + (packed ? " packed" : "");
    for (int64_t M : options.batches) {
      const std::vector<MatmulBf16> group{{X.data(), &w, Y.data(), M, N, K}};
      speeds.push_back(best_pass("bf16", kernels, M, N, K, 2.0 * static_cast<double>(N * K), options.passes,
                                 [&] { matmul_bf16_group(pool, group, Precision::Fast); }));
    }
  }

  // Whole tiles of 16 rows, each row padded to a multiple of 4 values, so that one buffer holds the
  // matrix in either int8 layout; on huge pages, as the decoder's int8 experts are (on 4 KiB pages
  // the stream would also measure the TLB and the prefetchers stopping at every page).
  const int64_t Kp = (K + 3) / 4 * 4, N = options.weight_bytes / Kp / 16 * 16;
  const int64_t groups = (K + kInt8Group - 1) / kInt8Group;
  LargeBuffer<int8_t> q(N * Kp);
  std::vector<float> scales(static_cast<size_t>(N * groups), 1.f / 127);
  pool.parallel_for(N, kColumnGrain, [&](int64_t n0, int64_t n1) {
    for (int64_t i = n0 * Kp; i < n1 * Kp; ++i) q.data()[i] = static_cast<int8_t>(i * 37 % 255 - 127);
  });
  std::vector<float> Y(static_cast<size_t>(max_batch * N));
  const double bytes = static_cast<double>(N * K) + static_cast<double>(scales.size() * sizeof(float));
  for (const char* name : {"avx512vnni", "avx512", "avx2"}) {
    const QuantKernelSet* set = quant_kernels_by_name(name);
    if (set == nullptr) continue;
    const Int8Weights w{q.data(), scales.data(), K, kInt8Group, groups, set->layout};
    // The exact form, then (on sets with integer dot products) the fast form's 8-bit activations.
    for (const auto gemm : {set->gemm_int8, set->gemm_int8_fast}) {
      if (gemm == nullptr) continue;
      const std::string kernels = std::string(name) + (gemm == set->gemm_int8_fast ? " fast" : "");
      for (int64_t M : options.batches)
        speeds.push_back(best_pass("int8", kernels, M, N, K, bytes, options.passes, [&] {
          pool.parallel_for(N, kColumnGrain, [&](int64_t n0, int64_t n1) { gemm(X.data(), K, w, Y.data(), N, M, n0, n1); });
        }));
    }
  }
  return speeds;
}

}  // namespace scriptorium
