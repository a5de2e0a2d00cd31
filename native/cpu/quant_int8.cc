// Int8 conversion of BF16 weights, the choice of int8 kernel set, and the threaded group driver.
#include "cpu/quant_int8.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace scriptorium {

namespace {

constexpr int64_t kColumnGrain = 16;  // as matmul_bf16_group: whole kernel tiles
constexpr float kRoundingShift = 12582912.f;  // 1.5 * 2^23

#if defined(__x86_64__)
bool has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

bool has_avx512vnni() { return has_avx512() && __builtin_cpu_supports("avx512vnni"); }
#endif

#if defined(__aarch64__) && defined(__linux__)
bool has_neondot() { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }
#elif defined(__aarch64__)
// Elsewhere (macOS) only the baseline is assumed, as for the BF16 set.
bool has_neondot() { return false; }
#endif

// Values per row in Tiles16: K rounded up to whole 4-column steps.
int64_t tiles16_row_length(int64_t K) { return (K + 3) / 4 * 4; }

}  // namespace

Int8Weights Int8Weights::rows_from(int64_t n0) const {
  const int64_t row_length = layout == Int8Layout::Tiles16 ? tiles16_row_length(K) : K;
  return Int8Weights{q + n0 * row_length, scales + n0 * groups, K, group, groups, layout};
}

Int8Weights Int8Matrix::view() const {
  return Int8Weights{q.data(), scales.data(), cols, group, (cols + group - 1) / group, layout};
}

Int8Matrix quantize_int8(ThreadPool& pool, const bf16_t* W, int64_t rows, int64_t cols, int64_t group,
                         Int8Layout layout) {
  if (rows < 1 || cols < 1) throw std::invalid_argument("quantize_int8: empty matrix");
  if (group != cols && (group < 16 || group % 16 != 0))
    throw std::invalid_argument("quantize_int8: group " + std::to_string(group) + " is neither a multiple of 16 nor the row length " +
                                std::to_string(cols));
  Int8Matrix m;
  m.rows = rows, m.cols = cols, m.group = group, m.layout = layout;
  const int64_t groups = (cols + group - 1) / group;
  const bool tiles = layout == Int8Layout::Tiles16;
  const int64_t stored_rows = tiles ? (rows + 15) / 16 * 16 : rows, row_length = tiles ? tiles16_row_length(cols) : cols;
  // Tiles16's padding is the weight 0, stored as 0 + 128.
  m.q = SlabArray<int8_t>(static_cast<size_t>(stored_rows * row_length), tiles ? static_cast<int8_t>(-128) : 0);
  m.scales = SlabArray<float>(static_cast<size_t>(stored_rows * groups), 0.f);
  // Where row r, column k (and scale group g) are stored.
  const auto q_at = [&](int64_t r, int64_t k) {
    return tiles ? (r / 16) * 16 * row_length + (k / 4) * 64 + (r % 16) * 4 + k % 4 : r * cols + k;
  };
  const auto scale_at = [&](int64_t r, int64_t g) { return tiles ? ((r / 16) * groups + g) * 16 + r % 16 : r * groups + g; };
  pool.parallel_for(rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t k0 = g * group, k1 = std::min(cols, k0 + group);
        float top = 0.f;
        for (int64_t k = k0; k < k1; ++k) top = std::max(top, std::fabs(bf16_to_f32(W[r * cols + k])));
        const float scale = top > 0.f ? top / 127.f : 1.f;
        const float inverse = top > 0.f ? 127.f / top : 0.f;
        m.scales[scale_at(r, g)] = scale;
        for (int64_t k = k0; k < k1; ++k) {
          // Round to nearest even by adding and removing 1.5 * 2^23 (|v| <= 127 here): unlike a
          // libm call per weight, this vectorises, and a full checkpoint converts in seconds.
          const float v = std::clamp(bf16_to_f32(W[r * cols + k]) * inverse, -127.f, 127.f);
          const int q = static_cast<int>((v + kRoundingShift) - kRoundingShift);
          m.q[q_at(r, k)] = static_cast<int8_t>(tiles ? (q >= 0 ? q - 128 : q + 128) : q);  // Tiles16: the byte q + 128
        }
      }
    }
  });
  return m;
}

const QuantKernelSet* quant_kernels_by_name(const char* name) {
  if (name == nullptr) return nullptr;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (std::strcmp(name, "avx512vnni") == 0) return has_avx512vnni() ? &quant_avx512vnni() : nullptr;
  if (std::strcmp(name, "avx512") == 0) return has_avx512() ? &quant_avx512() : nullptr;
  if (std::strcmp(name, "avx2") == 0) return has_avx2() ? &quant_avx2() : nullptr;
#endif
#if defined(__aarch64__)
  // NEON is part of every arm64 CPU.
  if (std::strcmp(name, "neon") == 0) return &quant_neon();
  if (std::strcmp(name, "neondot") == 0) return has_neondot() ? &quant_neondot() : nullptr;
#endif
  if (std::strcmp(name, "scalar") == 0) return &quant_scalar();
  return nullptr;
}

const QuantKernelSet& active_quant_kernels() {
  static const QuantKernelSet& set = []() -> const QuantKernelSet& {
    const std::string bf16_set = active_kernels().name;
    const char* name = bf16_set.rfind("avx512", 0) == 0 ? "avx512vnni"
                       : bf16_set == "avx2"                ? "avx2"
                       : bf16_set.rfind("neon", 0) == 0    ? "neondot"
                                                           : "scalar";
    const QuantKernelSet* named = quant_kernels_by_name(name);
    if (named == nullptr && std::strcmp(name, "avx512vnni") == 0) named = quant_kernels_by_name("avx512");
    if (named == nullptr && std::strcmp(name, "neondot") == 0) named = quant_kernels_by_name("neon");
    return named != nullptr ? *named : quant_scalar();
  }();
  return set;
}

void matmul_int8_group(ThreadPool& pool, const std::vector<MatmulInt8>& group, Precision precision) {
  const QuantKernelSet& set = active_quant_kernels();
  int64_t columns = 0;
  for (const MatmulInt8& p : group) {
    if (p.W.layout != set.layout) throw std::logic_error(std::string("matmul_int8_group: weights not in the layout the ") + set.name + " set reads");
    columns += p.N;
  }
  const auto gemm = precision == Precision::Fast && set.gemm_int8_fast != nullptr ? set.gemm_int8_fast : set.gemm_int8;
  const std::vector<MatmulInt8>* g = &group;
  pool.parallel_for(columns, kColumnGrain, [g, gemm](int64_t c0, int64_t c1) {
    int64_t first = 0;
    for (const MatmulInt8& p : *g) {
      const int64_t n0 = std::max<int64_t>(c0 - first, 0), n1 = std::min(c1 - first, p.N);
      if (n0 < n1) gemm(p.X, p.W.K, p.W, p.Y, p.N, p.M, n0, n1);
      first += p.N;
      if (first >= c1) return;
    }
  });
}

}  // namespace scriptorium
