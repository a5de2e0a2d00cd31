// AVX-512 (F/BW/VL/DQ) int8 product: 16 int8 weights sign-extended, converted and scaled per group
// in registers, then F32 FMA against F32 activations. Compiled with the kernels_avx512 flags; only
// quant_avx512() is exported.
// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_* (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "cpu/gemm_blocking.h"
#include "cpu/quant_int8.h"

namespace scriptorium {

namespace {

// Builtins only, no std:: inline functions (see kernels_avx512.cc).
inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

constexpr int64_t kL2Block = 192 << 10;  // bytes of X rows, and of W rows, kept in L2 per block

inline __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

inline __m512 dequant(__m128i q, __m512 scale) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), scale);
}

/* Y[MR, NR] = X[MR,K] @ (q * scale)[NR,K]^T; each weight vector is dequantised once for MR rows */
template <int MR, int NR>
void tile(const float* X, int64_t ldx, const int8_t* W, const float* S, const Int8Weights& w8, float* Y,
          int64_t ldy, WeightPrefetch<int8_t> ahead) {
  const int64_t K = w8.K;
  __m512 acc[MR][NR];
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t g0 = 0, g = 0; g0 < K; g0 += w8.group, ++g) {
    const int64_t g1 = min64(K, g0 + w8.group);
    __m512 scale[NR];
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) scale[j] = _mm512_set1_ps(S[j * w8.groups + g]);
    for (int64_t k = g0; k < g1; k += 16) {
      if (k % 64 == 0)  // one prefetch per 64-byte line
        for (int64_t r = 0; r < ahead.count; ++r)
          _mm_prefetch(reinterpret_cast<const char*>(ahead.row + r * ahead.stride + k), _MM_HINT_T0);
      const __mmask16 m = g1 - k >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(g1 - k);
      __m512 w[NR];
      #pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) w[j] = dequant(_mm_maskz_loadu_epi8(m, W + j * K + k), scale[j]);
      #pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m512 x = _mm512_maskz_loadu_ps(m, X + i * ldx + k);
        #pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(x, w[j], acc[i][j]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) Y[i * ldy + j] = _mm512_reduce_add_ps(acc[i][j]);
}

using TileFn = void (*)(const float*, int64_t, const int8_t*, const float*, const Int8Weights&, float*, int64_t,
                        WeightPrefetch<int8_t>);

// kTiles[MR - 1][NR - 1]. NR > 4 only for MR <= 2, where 4 columns give too few FMA chains.
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

constexpr QuantKernelSet kSet = {"avx512", 0, Int8Layout::Rows, gemm_int8, nullptr};

}  // namespace

const QuantKernelSet& quant_avx512() { return kSet; }

}  // namespace scriptorium
