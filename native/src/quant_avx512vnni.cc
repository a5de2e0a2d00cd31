// AVX-512 VNNI int8 product: each F32 activation row is quantised to int16 with one scale per row
// (max|x| / 32767, round to nearest even), and vpdpwssd multiplies 32 int16 activations by 32
// sign-extended int8 weights per instruction, summing pairs into int32 lanes. A lane holds at most
// kSpan / 16 products of |32767 * 127|, far from overflow; each span of a weight group is converted
// to F32 once and scaled by its weight scale, and the row's scale is applied once at the end (a scale
// per group as well measured 10-30% slower). No unsigned offset is needed, unlike vpdpbusd with two
// int8 digits, for the same 15 bits and fewer instructions per weight.
// Compiled with the AVX-512 flags plus -mavx512vnni; only quant_avx512vnni() is exported.
// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_* (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <new>

#include "quant_int8.h"

namespace scriptorium {

namespace {

// Builtins only, no std:: inline functions (see kernels_avx512.cc).
inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

constexpr int64_t kSpan = 4096;    // columns summed in int32 before converting: 256 products a lane
constexpr int64_t kRowBlock = 64;  // activation rows quantised at once
constexpr int64_t kColumnBlock = 24;  // weight rows kept in L1/L2 while every row block reads them

inline __mmask32 mask32(int64_t n) { return n >= 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << n) - 1u); }
inline __mmask16 mask16(int64_t n) { return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u); }

// One row: xq[0:K] = round(x / scale), returns scale (0 for an all-zero row; NaN for a row holding
// a NaN or an infinity, so that its products are NaN as with F32 activations).
float quantize_row(const float* x, int64_t K, int16_t* xq) {
  const int64_t k0 = 0, k1 = K;
  __m512 top = _mm512_setzero_ps();
  __mmask16 nan = 0;
  for (int64_t k = k0; k < k1; k += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(mask16(k1 - k), x + k);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    top = _mm512_max_ps(top, _mm512_abs_ps(v));
  }
  const float amax = _mm512_reduce_max_ps(top);
  const bool finite = nan == 0 && amax <= 3.40282347e38f;
  const float scale = finite ? amax / 32767.f : __builtin_nanf("");
  const __m512 inverse = _mm512_set1_ps(finite && amax > 0.f ? 32767.f / amax : 0.f);
  for (int64_t k = k0; k < k1; k += 16) {
    const __mmask16 m = mask16(k1 - k);
    const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + k), inverse));
    _mm256_mask_storeu_epi16(xq + k, m, _mm512_cvtsepi32_epi16(q));
  }
  return scale;
}

/* Y[MR, NR] = Xq[MR,K] @ q[NR,K]^T, each (row, column) summed in the same order whatever the tile */
template <int MR, int NR>
void tile(const int16_t* Xq, const float* XS, const int8_t* W, const float* S, const Int8Weights& w8, float* Y,
          int64_t ldy, bool prefetch) {
  const int64_t K = w8.K;
  __m512 acc[MR][NR];
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t g0 = 0, g = 0; g0 < K; g0 += w8.group, ++g) {
    const int64_t g1 = min64(K, g0 + w8.group);
    for (int64_t s0 = g0; s0 < g1; s0 += kSpan) {
      const int64_t s1 = min64(g1, s0 + kSpan);
      __m512i dot[MR][NR];
      #pragma GCC unroll 8
      for (int i = 0; i < MR; ++i)
        #pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) dot[i][j] = _mm512_setzero_si512();
      for (int64_t k = s0; k < s1; k += 32) {
        const __mmask32 m = mask32(s1 - k);  // all ones but in a group's last short step
        if (prefetch && k % 64 == 0)  // the next tile's weight rows, one 64-byte line each
          #pragma GCC unroll 8
          for (int j = 0; j < NR; ++j) _mm_prefetch(reinterpret_cast<const char*>(W + (NR + j) * K + k), _MM_HINT_T0);
        __m512i w[NR];
        #pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) w[j] = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, W + j * K + k));
        #pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
          const __m512i x = _mm512_maskz_loadu_epi16(m, Xq + i * K + k);
          #pragma GCC unroll 8
          for (int j = 0; j < NR; ++j) dot[i][j] = _mm512_dpwssd_epi32(dot[i][j], x, w[j]);
        }
      }
      #pragma GCC unroll 8
      for (int i = 0; i < MR; ++i)
        #pragma GCC unroll 8
        for (int j = 0; j < NR; ++j)
          acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i][j]), _mm512_set1_ps(S[j * w8.groups + g]), acc[i][j]);
    }
  }
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) Y[i * ldy + j] = _mm512_reduce_add_ps(acc[i][j]) * XS[i];
}

using TileFn = void (*)(const int16_t*, const float*, const int8_t*, const float*, const Int8Weights&, float*,
                        int64_t, bool);

// kTiles[MR - 1][NR - 1]: 2 * MR * NR accumulators and NR weight vectors fit the 32 registers.
constexpr TileFn kTiles[4][8] = {
    {tile<1, 1>, tile<1, 2>, tile<1, 3>, tile<1, 4>, tile<1, 5>, tile<1, 6>, tile<1, 7>, tile<1, 8>},
    {tile<2, 1>, tile<2, 2>, tile<2, 3>, tile<2, 4>},
    {tile<3, 1>, tile<3, 2>, tile<3, 3>},
    {tile<4, 1>, tile<4, 2>, tile<4, 3>},
};
constexpr int64_t kTileColumns[4] = {8, 4, 3, 3};  // kColumnBlock is a multiple of each

void gemm_int8(const float* X, int64_t ldx, const Int8Weights& W, float* Y, int64_t ldy, int64_t M, int64_t n0,
               int64_t n1) {
  const int64_t K = W.K, rows = min64(M, kRowBlock);
  // ::operator new (which throws std::bad_alloc itself), not std::vector: this file may define no
  // inline copy built with its ISA flags. One block: the scales, then the int16 rows.
  void* scratch = ::operator new(sizeof(float) * rows + sizeof(int16_t) * rows * K);
  float* XS = static_cast<float*>(scratch);
  int16_t* Xq = reinterpret_cast<int16_t*>(XS + rows);
  for (int64_t r0 = 0; r0 < M; r0 += kRowBlock) {
    const int64_t mb = min64(kRowBlock, M - r0);
    for (int64_t i = 0; i < mb; ++i) XS[i] = quantize_row(X + (r0 + i) * ldx, K, Xq + i * K);
    for (int64_t c0 = n0; c0 < n1; c0 += kColumnBlock) {
      const int64_t c1 = min64(n1, c0 + kColumnBlock);
      for (int64_t i0 = 0; i0 < mb; i0 += 4) {
        const int64_t mr = min64(4, mb - i0);
        for (int64_t j = c0; j < c1; j += kTileColumns[mr - 1]) {
          const int64_t nr = min64(kTileColumns[mr - 1], c1 - j);
          kTiles[mr - 1][nr - 1](Xq + i0 * K, XS + i0, W.q + j * K, W.scales + j * W.groups, W,
                                 Y + (r0 + i0) * ldy + j, ldy, i0 == 0);
        }
      }
    }
  }
  ::operator delete(scratch);
}

constexpr QuantKernelSet kSet = {"avx512vnni", 16, gemm_int8};

}  // namespace

const QuantKernelSet& quant_avx512vnni() { return kSet; }

}  // namespace scriptorium
