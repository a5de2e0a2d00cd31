// NEON int8 product (every arm64 CPU): 8 int8 weights widened, converted and scaled per group in
// registers, then the F32 FMA against F32 activations, as the AVX-512 dequantising set does. Only
// quant_neon() is exported.
#include <arm_neon.h>

#include "cpu/gemm_blocking.h"
#include "cpu/quant_int8.h"

namespace scriptorium {

namespace {

// Builtins only, no std:: inline functions (see kernels_avx2.cc).
inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

constexpr int64_t kL2Block = 192 << 10;  // bytes of X rows, and of W rows, kept in L2 per block
constexpr int64_t kStep = 8;             // weights per row and step: two F32 vectors

/* Y[MR, NR] = X[MR,K] @ (q * scale)[NR,K]^T; each step's weights are dequantised once for MR rows,
   and each output sums k in 4 lanes (k mod 4, in k order) added at the end, whatever the tile */
template <int MR, int NR>
void tile(const float* X, int64_t ldx, const int8_t* W, const float* S, const Int8Weights& w8, float* Y,
          int64_t ldy, WeightPrefetch<int8_t> ahead) {
  const int64_t K = w8.K;
  float32x4_t acc[MR][NR];
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  for (int64_t g0 = 0, g = 0; g0 < K; g0 += w8.group, ++g) {
    const int64_t g1 = min64(K, g0 + w8.group);
    float32x4_t scale[NR];
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) scale[j] = vdupq_n_f32(S[j * w8.groups + g]);
    for (int64_t k = g0; k < g1; k += kStep) {
      if (k % 64 == 0)  // one prefetch per 64-byte line
        for (int64_t r = 0; r < ahead.count; ++r) __builtin_prefetch(ahead.row + r * ahead.stride + k);
      const int64_t n = min64(kStep, g1 - k);
      float32x4_t w[NR][2];
      #pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        int8x8_t q;
        if (n == kStep) {
          q = vld1_s8(W + j * K + k);
        } else {
          int8_t buf[kStep] = {};
          for (int64_t i = 0; i < n; ++i) buf[i] = W[j * K + k + i];
          q = vld1_s8(buf);
        }
        const int16x8_t wide = vmovl_s8(q);
        w[j][0] = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(wide))), scale[j]);
        w[j][1] = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(wide))), scale[j]);
      }
      #pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        float32x4_t x[2];
        if (n == kStep) {
          x[0] = vld1q_f32(X + i * ldx + k);
          x[1] = vld1q_f32(X + i * ldx + k + 4);
        } else {
          float buf[kStep] = {};
          for (int64_t c = 0; c < n; ++c) buf[c] = X[i * ldx + k + c];
          x[0] = vld1q_f32(buf);
          x[1] = vld1q_f32(buf + 4);
        }
        #pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) {
          acc[i][j] = vfmaq_f32(acc[i][j], x[0], w[j][0]);
          acc[i][j] = vfmaq_f32(acc[i][j], x[1], w[j][1]);
        }
      }
    }
  }
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) Y[i * ldy + j] = vaddvq_f32(acc[i][j]);
}

using TileFn = void (*)(const float*, int64_t, const int8_t*, const float*, const Int8Weights&, float*, int64_t,
                        WeightPrefetch<int8_t>);

// kTiles[MR - 1][NR - 1]: at most 16 accumulators beside 2 NR weight and 2 activation vectors.
constexpr TileFn kTiles[4][8] = {
    {tile<1, 1>, tile<1, 2>, tile<1, 3>, tile<1, 4>, tile<1, 5>, tile<1, 6>, tile<1, 7>, tile<1, 8>},
    {tile<2, 1>, tile<2, 2>, tile<2, 3>, tile<2, 4>, tile<2, 5>, tile<2, 6>, tile<2, 7>, tile<2, 8>},
    {tile<3, 1>, tile<3, 2>, tile<3, 3>, tile<3, 4>},
    {tile<4, 1>, tile<4, 2>, tile<4, 3>, tile<4, 4>},
};

// The tile call gemm_blocked makes: a W row pointer gives the row index of its scales.
struct Tiles {
  const Int8Weights& w8;
  void operator()(int64_t mr, int64_t nr, const float* X, int64_t ldx, const int8_t* W, int64_t, float* Y,
                  int64_t ldy, int64_t, WeightPrefetch<int8_t> ahead) const {
    const int64_t row = (W - w8.q) / w8.K;
    kTiles[mr - 1][nr - 1](X, ldx, W, w8.scales + row * w8.groups, w8, Y, ldy, ahead);
  }
};

void gemm_int8(const float* X, int64_t ldx, const Int8Weights& W, float* Y, int64_t ldy, int64_t M, int64_t n0,
               int64_t n1) {
  const int64_t K = W.K;
  const int64_t nb = M <= 2 ? 8 : 4;
  const int64_t mc = max64(4, kL2Block / (K * 4) / 4 * 4);
  const int64_t nc = max64(nb, kL2Block / K / nb * nb);
  gemm_blocked(Tiles{W}, GemmBlocking{4, nb, mc, nc, true}, X, ldx, W.q, K, Y, ldy, M, n0, n1, K);
}

constexpr QuantKernelSet kSet = {"neon", 0, Int8Layout::Rows, gemm_int8, nullptr};

}  // namespace

const QuantKernelSet& quant_neon() { return kSet; }

}  // namespace scriptorium
