// NEON (Advanced SIMD) kernel set, for every arm64 CPU: the matrix products gemm_bf16, gemm_f32 and
// gemm_nn_f32 in 128-bit registers; every other member is the scalar set's. BF16 weights are widened
// exactly to F32 and multiplied with the F32 FMA (convert-and-FMA, as avx2 and avx512 do), so
// gemm_bf16_fast is gemm_bf16 and there are no packed or BF16 attention products. Only
// kernels_neon() is exported.
#include <arm_neon.h>

#include "cpu/gemm_blocking.h"
#include "cpu/kernels.h"

namespace scriptorium {

namespace {

// Builtins only, no std:: inline functions (see kernels_avx2.cc).
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

constexpr int64_t kL2Block = 192 << 10;  // bytes of X rows, and of W rows, kept in L2 per block
constexpr int kTileRows = 4, kTileCols = 4;  // 16 accumulators + 4 weights + 1 activation of 32 registers

inline float32x4_t load4(const float* p) { return vld1q_f32(p); }
inline float32x4_t load4(const bf16_t* p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)); }

// The first n < 4 values at p widened to F32, zero-padded: no read past the row's end.
template <typename T>
inline float32x4_t load_tail(const T* p, int64_t n) {
  T buf[4] = {};
  for (int64_t i = 0; i < n; ++i) buf[i] = p[i];
  return load4(buf);
}

/* Y[MR, NR] = X[MR,K] @ W[NR,K]^T; each output sums k in 4 lanes (k mod 4, in k order, the last
   step zero-padded) and adds the lanes at the end, whatever the tile: a row is the same in any batch */
template <int MR, int NR, typename WT>
void tile(const float* X, int64_t ldx, const WT* W, int64_t ldw, float* Y, int64_t ldy, int64_t K,
          WeightPrefetch<WT> ahead) {
  float32x4_t acc[MR][NR];
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  constexpr int64_t kLine = 64 / sizeof(WT);  // values of W per cache line
  int64_t k = 0;
  for (; k + 4 <= K; k += 4) {
    if (k % kLine == 0)
      for (int64_t r = 0; r < ahead.count; ++r) __builtin_prefetch(ahead.row + r * ahead.stride + k);
    float32x4_t w[NR];
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) w[j] = load4(W + j * ldw + k);
    #pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const float32x4_t x = vld1q_f32(X + i * ldx + k);
      #pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) acc[i][j] = vfmaq_f32(acc[i][j], x, w[j]);
    }
  }
  if (k < K) {
    float32x4_t w[NR];
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) w[j] = load_tail(W + j * ldw + k, K - k);
    #pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const float32x4_t x = load_tail(X + i * ldx + k, K - k);
      #pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) acc[i][j] = vfmaq_f32(acc[i][j], x, w[j]);
    }
  }
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) Y[i * ldy + j] = vaddvq_f32(acc[i][j]);
}

template <typename WT>
using TileFn = void (*)(const float*, int64_t, const WT*, int64_t, float*, int64_t, int64_t, WeightPrefetch<WT>);

// kTiles<WT>[MR - 1][NR - 1].
template <typename WT>
constexpr TileFn<WT> kTiles[kTileRows][kTileCols] = {
    {tile<1, 1, WT>, tile<1, 2, WT>, tile<1, 3, WT>, tile<1, 4, WT>},
    {tile<2, 1, WT>, tile<2, 2, WT>, tile<2, 3, WT>, tile<2, 4, WT>},
    {tile<3, 1, WT>, tile<3, 2, WT>, tile<3, 3, WT>, tile<3, 4, WT>},
    {tile<4, 1, WT>, tile<4, 2, WT>, tile<4, 3, WT>, tile<4, 4, WT>},
};

template <typename WT>
struct Tiles {
  void operator()(int64_t mr, int64_t nr, const float* X, int64_t ldx, const WT* W, int64_t ldw, float* Y,
                  int64_t ldy, int64_t K, WeightPrefetch<WT> ahead) const {
    kTiles<WT>[mr - 1][nr - 1](X, ldx, W, ldw, Y, ldy, K, ahead);
  }
};

/* Y[M, n0:n1] = X[M,K] @ W[n0:n1,K]^T in blocks of X rows and W rows sized to stay in L2 */
template <typename WT>
void gemm(const float* X, int64_t ldx, const WT* W, int64_t ldw, float* Y, int64_t ldy, int64_t M, int64_t n0,
          int64_t n1, int64_t K) {
  const int64_t mc = max64(kTileRows, kL2Block / (K * 4) / kTileRows * kTileRows);
  const int64_t nc = max64(kTileCols, kL2Block / (K * static_cast<int64_t>(sizeof(WT))) / kTileCols * kTileCols);
  gemm_blocked(Tiles<WT>{}, GemmBlocking{kTileRows, kTileCols, mc, nc, true}, X, ldx, W, ldw, Y, ldy, M, n0, n1, K);
}

void gemm_bf16(const float* X, int64_t ldx, const bf16_t* W, float* Y, int64_t ldy, int64_t M, int64_t n0,
               int64_t n1, int64_t K) {
  gemm(X, ldx, W, K, Y, ldy, M, n0, n1, K);
}

void gemm_f32(const float* X, int64_t ldx, const float* W, int64_t ldw, float* Y, int64_t ldy, int64_t M,
              int64_t n0, int64_t n1, int64_t K) {
  gemm(X, ldx, W, ldw, Y, ldy, M, n0, n1, K);
}

/* Y[M, n0:n1] = X[M,K] @ B[K, n0:n1]: 4 columns per vector, one FMA per k in k order (bitwise the
   scalar set's sums), the last columns one at a time */
void gemm_nn_f32(const float* X, int64_t ldx, const float* B, int64_t ldb, float* Y, int64_t ldy, int64_t M,
                 int64_t n0, int64_t n1, int64_t K) {
  for (int64_t m = 0; m < M; ++m) {
    const float* x = X + m * ldx;
    float* y = Y + m * ldy;
    int64_t n = n0;
    for (; n + 16 <= n1; n += 16) {
      float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
      for (int64_t k = 0; k < K; ++k) {
        const float32x4_t xk = vdupq_n_f32(x[k]);
        #pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) acc[j] = vfmaq_f32(acc[j], xk, vld1q_f32(B + k * ldb + n + 4 * j));
      }
      #pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) vst1q_f32(y + n + 4 * j, acc[j]);
    }
    for (; n + 4 <= n1; n += 4) {
      float32x4_t acc = vdupq_n_f32(0.0f);
      for (int64_t k = 0; k < K; ++k) acc = vfmaq_f32(acc, vdupq_n_f32(x[k]), vld1q_f32(B + k * ldb + n));
      vst1q_f32(y + n, acc);
    }
    for (; n < n1; ++n) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc = __builtin_fmaf(x[k], B[k * ldb + n], acc);
      y[n] = acc;
    }
  }
}

}  // namespace

const KernelSet& kernels_neon() {
  static const KernelSet set = [] {
    KernelSet s = kernels_scalar();
    s.name = "neon";
    s.gemm_bf16 = gemm_bf16;
    // Convert-and-FMA has no cheaper single-rounding product, so fast precision is gemm_bf16.
    s.gemm_bf16_fast = gemm_bf16;
    s.gemm_f32 = gemm_f32;
    s.gemm_nn_f32 = gemm_nn_f32;
    return s;
  }();
  return set;
}

}  // namespace scriptorium
