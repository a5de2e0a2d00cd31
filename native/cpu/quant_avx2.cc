// AVX2 + FMA int8 product: 8 int8 weights sign-extended, converted and scaled per group in
// registers, then F32 FMA against F32 activations. Compiled with the kernels_avx2 flags; only
// quant_avx2() is exported.
#include <immintrin.h>

#include "cpu/gemm_blocking.h"
#include "cpu/quant_int8.h"

namespace scriptorium {

namespace {

// Builtins only, no std:: inline functions (see kernels_avx2.cc).
inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

constexpr int64_t kL2Block = 192 << 10;  // bytes of X rows, and of W rows, kept in L2 per block

inline __m256i tail_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

inline __m256 dequant(__m128i q, __m256 scale) {
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), scale);
}

// The first n < 8 weights at p, zero-padded: no read past the row's end.
inline __m128i load_q_tail(const int8_t* p, int64_t n) {
  int8_t buf[8] = {};
  for (int64_t i = 0; i < n; ++i) buf[i] = p[i];
  return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(buf));
}

/* Y[MR, NR] = X[MR,K] @ (q * scale)[NR,K]^T; each weight vector is dequantised once for MR rows */
template <int MR, int NR>
void tile(const float* X, int64_t ldx, const int8_t* W, const float* S, const Int8Weights& w8, float* Y,
          int64_t ldy, WeightPrefetch<int8_t> ahead) {
  const int64_t K = w8.K;
  __m256 acc[MR][NR];
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int64_t g0 = 0, g = 0; g0 < K; g0 += w8.group, ++g) {
    const int64_t g1 = min64(K, g0 + w8.group);
    __m256 scale[NR];
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) scale[j] = _mm256_set1_ps(S[j * w8.groups + g]);
    int64_t k = g0;
    for (; k + 8 <= g1; k += 8) {
      if (k % 64 == 0)  // one prefetch per 64-byte line
        for (int64_t r = 0; r < ahead.count; ++r)
          _mm_prefetch(reinterpret_cast<const char*>(ahead.row + r * ahead.stride + k), _MM_HINT_T0);
      __m256 w[NR];
      #pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) w[j] = dequant(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(W + j * K + k)), scale[j]);
      #pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m256 x = _mm256_loadu_ps(X + i * ldx + k);
        #pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(x, w[j], acc[i][j]);
      }
    }
    if (k < g1) {
      const __m256i m = tail_mask(g1 - k);
      __m256 w[NR];
      #pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) w[j] = dequant(load_q_tail(W + j * K + k, g1 - k), scale[j]);
      #pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m256 x = _mm256_maskload_ps(X + i * ldx + k, m);
        #pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(x, w[j], acc[i][j]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc[i][j]), _mm256_extractf128_ps(acc[i][j], 1));
      s = _mm_add_ps(s, _mm_movehl_ps(s, s));
      s = _mm_add_ss(s, _mm_movehdup_ps(s));
      Y[i * ldy + j] = _mm_cvtss_f32(s);
    }
}

using TileFn = void (*)(const float*, int64_t, const int8_t*, const float*, const Int8Weights&, float*, int64_t,
                        WeightPrefetch<int8_t>);

// kTiles[MR - 1][NR - 1]: 3x4 tiles (12 accumulators + 4 weights = 16 ymm); NR up to 6 for one row.
constexpr TileFn kTiles[3][6] = {
    {tile<1, 1>, tile<1, 2>, tile<1, 3>, tile<1, 4>, tile<1, 5>, tile<1, 6>},
    {tile<2, 1>, tile<2, 2>, tile<2, 3>, tile<2, 4>},
    {tile<3, 1>, tile<3, 2>, tile<3, 3>, tile<3, 4>},
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
  const int64_t nb = M == 1 ? 6 : 4;
  const int64_t mc = max64(3, kL2Block / (K * 4) / 3 * 3);
  const int64_t nc = max64(nb, kL2Block / K / nb * nb);
  gemm_blocked(Tiles{W}, GemmBlocking{3, nb, mc, nc, true}, X, ldx, W.q, K, Y, ldy, M, n0, n1, K);
}

constexpr QuantKernelSet kSet = {"avx2", 0, Int8Layout::Rows, gemm_int8, nullptr};

}  // namespace

const QuantKernelSet& quant_avx2() { return kSet; }

}  // namespace scriptorium
