// AVX-512 (F/BW/VL/DQ) kernel set: 16-lane F32 FMA; bf16 weights widened with a 16-bit shift.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma; only kernels_avx512() is
// exported, so nothing here can leak into code that runs on smaller CPUs.
// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_* (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "cpu/gemm_blocking.h"
#include "cpu/kernels.h"
#include "cpu/online_attention.h"

namespace scriptorium {

namespace {

// No std:: inline functions or templates here, only builtins: at -O0 those are emitted as weak
// symbols, and the linker could hand this file's ISA-specific copy to code that runs on any CPU.
constexpr float kInf = __builtin_inff();
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

constexpr int64_t kL2Block = 192 << 10;  // bytes of X rows, and of W rows, kept in L2 per block

inline __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

inline __m512 widen(__m256i b) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
}
inline __m512 load_w(const bf16_t* p) {
  return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 load_w(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load_w(const bf16_t* p, __mmask16 m) { return widen(_mm256_maskz_loadu_epi16(m, p)); }
inline __m512 load_w(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }

/* exp(x[16]), ~2 ulp; exp(x) = 0 for x < -87.3 (incl. -inf), inf above ln(FLT_MAX) */
inline __m512 exp16(__m512 x) {
  const __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_LT_OQ);
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
  x = _mm512_max_ps(_mm512_set1_ps(-87.3f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~tiny), _mm512_scalef_ps(p, n));
}

template <int MR, int NR, bool kTail>
inline void fma_step(__m512 (&acc)[MR][NR], const __m512 (&w)[NR], const float* X, int64_t ldx,
                     int64_t k, __mmask16 m) {
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const float* xi = X + i * ldx + k;
    const __m512 x = kTail ? _mm512_maskz_loadu_ps(m, xi) : _mm512_loadu_ps(xi);
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(x, w[j], acc[i][j]);
  }
}

/* Y[MR, NR] = X[MR,K] @ W[NR,K]^T: each W vector is widened once and reused for MR rows */
template <int MR, int NR, typename WT>
void tile(const float* X, int64_t ldx, const WT* W, int64_t ldw, float* Y, int64_t ldy, int64_t K,
          WeightPrefetch<WT> ahead) {
  __m512 acc[MR][NR];
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    if (k * int64_t(sizeof(WT)) % 64 == 0)  // one prefetch per 64-byte line
      for (int64_t r = 0; r < ahead.count; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(ahead.row + r * ahead.stride + k), _MM_HINT_T0);
    __m512 w[NR];
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) w[j] = load_w(W + j * ldw + k);
    fma_step<MR, NR, false>(acc, w, X, ldx, k, 0);
  }
  if (k < K) {
    const __mmask16 m = tail_mask(K - k);
    __m512 w[NR];
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) w[j] = load_w(W + j * ldw + k, m);
    fma_step<MR, NR, true>(acc, w, X, ldx, k, m);
  }
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) Y[i * ldy + j] = _mm512_reduce_add_ps(acc[i][j]);
}

template <typename WT>
using TileFn = void (*)(const float*, int64_t, const WT*, int64_t, float*, int64_t, int64_t,
                        WeightPrefetch<WT>);

// kTiles<WT>[MR - 1][NR - 1]. NR > 4 only for MR <= 2, where 4 columns give too few FMA chains.
template <typename WT>
constexpr TileFn<WT> kTiles[4][8] = {
    {tile<1, 1, WT>, tile<1, 2, WT>, tile<1, 3, WT>, tile<1, 4, WT>, tile<1, 5, WT>, tile<1, 6, WT>,
     tile<1, 7, WT>, tile<1, 8, WT>},
    {tile<2, 1, WT>, tile<2, 2, WT>, tile<2, 3, WT>, tile<2, 4, WT>, tile<2, 5, WT>, tile<2, 6, WT>,
     tile<2, 7, WT>, tile<2, 8, WT>},
    {tile<3, 1, WT>, tile<3, 2, WT>, tile<3, 3, WT>, tile<3, 4, WT>},
    {tile<4, 1, WT>, tile<4, 2, WT>, tile<4, 3, WT>, tile<4, 4, WT>},
};

// Up to 4 rows per tile; 8 columns when the rows are too few to give 4 columns enough FMA chains.
// X blocks (mc rows) and W panels (nc rows) are sized to stay in L2.
struct Tiles {
  template <typename WT>
  void operator()(int64_t mr, int64_t nr, const float* X, int64_t ldx, const WT* W, int64_t ldw, float* Y,
                  int64_t ldy, int64_t K, WeightPrefetch<WT> ahead) const {
    kTiles<WT>[mr - 1][nr - 1](X, ldx, W, ldw, Y, ldy, K, ahead);
  }
};

/* Y[M, n0:n1] = X[M,K] @ W[n0:n1,K]^T */
template <typename WT>
void gemm(const float* X, int64_t ldx, const WT* W, int64_t ldw, float* Y, int64_t ldy, int64_t M,
          int64_t n0, int64_t n1, int64_t K) {
  const int64_t nb = M <= 2 ? 8 : 4;
  const int64_t mc = max64(4, kL2Block / (K * 4) / 4 * 4);
  const int64_t nc = max64(nb, kL2Block / (K * int64_t(sizeof(WT))) / nb * nb);
  gemm_blocked(Tiles{}, GemmBlocking{4, nb, mc, nc, true}, X, ldx, W, ldw, Y, ldy, M, n0, n1, K);
}

void gemm_bf16(const float* X, int64_t ldx, const bf16_t* W, float* Y, int64_t ldy, int64_t M,
               int64_t n0, int64_t n1, int64_t K) {
  gemm(X, ldx, W, K, Y, ldy, M, n0, n1, K);
}

void gemm_f32(const float* X, int64_t ldx, const float* W, int64_t ldw, float* Y, int64_t ldy,
              int64_t M, int64_t n0, int64_t n1, int64_t K) {
  gemm(X, ldx, W, ldw, Y, ldy, M, n0, n1, K);
}

/* Y[MR, cols] = X[MR,K] @ B[K, cols], cols <= 16 * NR (the last vector masked by m) */
template <int MR, int NR>
void nn_tile(const float* X, int64_t ldx, const float* B, int64_t ldb, float* Y, int64_t ldy, int64_t K,
             __mmask16 m) {
  __m512 acc[MR][NR];
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m512 b[NR];
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j)
      b[j] = j + 1 < NR ? _mm512_loadu_ps(B + k * ldb + 16 * j) : _mm512_maskz_loadu_ps(m, B + k * ldb + 16 * j);
    #pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 x = _mm512_set1_ps(X[i * ldx + k]);
      #pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(x, b[j], acc[i][j]);
    }
  }
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      if (j + 1 < NR) {
        _mm512_storeu_ps(Y + i * ldy + 16 * j, acc[i][j]);
      } else {
        _mm512_mask_storeu_ps(Y + i * ldy + 16 * j, m, acc[i][j]);
      }
    }
}

using NnTileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, __mmask16);

// kNnTiles[MR - 1][NR - 1]: up to 6 rows x 64 columns, 24 accumulators.
constexpr NnTileFn kNnTiles[6][4] = {
    {nn_tile<1, 1>, nn_tile<1, 2>, nn_tile<1, 3>, nn_tile<1, 4>},
    {nn_tile<2, 1>, nn_tile<2, 2>, nn_tile<2, 3>, nn_tile<2, 4>},
    {nn_tile<3, 1>, nn_tile<3, 2>, nn_tile<3, 3>, nn_tile<3, 4>},
    {nn_tile<4, 1>, nn_tile<4, 2>, nn_tile<4, 3>, nn_tile<4, 4>},
    {nn_tile<5, 1>, nn_tile<5, 2>, nn_tile<5, 3>, nn_tile<5, 4>},
    {nn_tile<6, 1>, nn_tile<6, 2>, nn_tile<6, 3>, nn_tile<6, 4>},
};

struct NnTiles {
  void operator()(int64_t mr, int64_t cols, const float* X, int64_t ldx, const float* B, int64_t ldb, float* Y,
                  int64_t ldy, int64_t K) const {
    const int64_t vectors = (cols + 15) / 16;
    kNnTiles[mr - 1][vectors - 1](X, ldx, B, ldb, Y, ldy, K, tail_mask(cols - 16 * (vectors - 1)));
  }
};

/* Y[M, n0:n1] = X[M,K] @ B[K, n0:n1] in tiles of 6 rows x 64 columns */
void gemm_nn_f32(const float* X, int64_t ldx, const float* B, int64_t ldb, float* Y, int64_t ldy,
                 int64_t M, int64_t n0, int64_t n1, int64_t K) {
  gemm_nn_blocked(NnTiles{}, 6, 64, X, ldx, B, ldb, Y, ldy, M, n0, n1, K);
}

/* 1 + erf(v / sqrt 2) for 16 lanes: erfc(|z|) ~ poly(t) exp(-z^2), t = 1 / (1 + p|z|) (Abramowitz-Stegun
   7.1.26, |error| < 1.5e-7), then 2 - erfc for v >= 0 */
inline __m512 one_plus_erf16(__m512 v) {
  const __m512 z = _mm512_mul_ps(_mm512_abs_ps(v), _mm512_set1_ps(0.70710678118654752f));
  const __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(z, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  const __m512 erfc = _mm512_mul_ps(_mm512_mul_ps(p, t), exp16(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(z, z))));
  const __mmask16 positive = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ);
  return _mm512_mask_sub_ps(erfc, positive, _mm512_set1_ps(2.0f), erfc);
}

/* x[n] = 0.5 x (1 + erf(x / sqrt 2)) */
void gelu_erf(float* x, int64_t n) {
  const __m512 half = _mm512_set1_ps(0.5f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_mul_ps(half, v), one_plus_erf16(v)));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_mul_ps(half, v), one_plus_erf16(v)));
  }
}

/* a[n] . b[n] */
inline float dot(const float* a, const float* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

/* y[n] = x[n] * rsqrt(mean(x^2) + eps) * w[n] */
void rmsnorm(const float* x, const bf16_t* w, float* y, int64_t n, float eps) {
  const float r = 1.0f / __builtin_sqrtf(dot(x, x, n) / static_cast<float>(n) + eps);
  const __m512 vr = _mm512_set1_ps(r);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + i), vr);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(v, load_w(w + i)));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vr);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, load_w(w + i, m)));
  }
}

inline __m512 silu_mul(__m512 g, __m512 u) {
  const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
  return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), u);
}

/* out[n] = gate[n] / (1 + exp(-gate[n])) * up[n] */
void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, silu_mul(_mm512_loadu_ps(gate + i), _mm512_loadu_ps(up + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    _mm512_mask_storeu_ps(out + i, m, silu_mul(g, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

/* max(x[n]), -inf for n == 0; NaN entries are skipped */
inline float max_of(const float* x, int64_t n) {
  const __m512 ninf = _mm512_set1_ps(-kInf);
  __m512 mx = ninf;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) mx = _mm512_max_ps(_mm512_loadu_ps(x + i), mx);
  if (i < n) mx = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, tail_mask(n - i), x + i), mx);
  return _mm512_reduce_max_ps(mx);
}

/* x[n] <- exp(x[n] - mx); returns the sum */
inline float exp_shift(float* x, int64_t n, float mx) {
  const __m512 vm = _mm512_set1_ps(mx);
  __m512 sum = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    _mm512_storeu_ps(x + i, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 e = _mm512_maskz_mov_ps(m, exp16(_mm512_sub_ps(v, vm)));
    _mm512_mask_storeu_ps(x + i, m, e);
    sum = _mm512_add_ps(sum, e);
  }
  return _mm512_reduce_add_ps(sum);
}

/* x[n] *= a */
inline void scale(float* x, float a, int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), va));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), va));
  }
}

/* y[n] += a * x[n] */
void axpy(float* y, float a, const float* x, int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, v, _mm512_maskz_loadu_ps(m, y + i)));
  }
}

/* IEEE half rows of the KV cache, widened exactly */
inline __m512 load_f16(const f16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline __m512 load_f16(const f16_t* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }

/* y[n] = x[n] widened from IEEE half */
void from_f16(const f16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, load_f16(x + i));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, load_f16(x + i, m));
  }
}

/* y[n] = x[n] to IEEE half, nearest even, saturated to +-65504 (min/max order keeps NaN) */
void to_f16(const float* x, f16_t* y, int64_t n) {
  const __m512 hi = _mm512_set1_ps(65504.0f), lo = _mm512_set1_ps(-65504.0f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_max_ps(lo, _mm512_min_ps(hi, _mm512_loadu_ps(x + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_max_ps(lo, _mm512_min_ps(hi, _mm512_maskz_loadu_ps(m, x + i)));
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
}

/* x[n] <- softmax(x[n]); non-finite maxima go to the scalar set, which defines them */
void softmax(float* x, int64_t n) {
  const float mx = max_of(x, n);
  if (__builtin_isinf(mx)) {
    kernels_scalar().softmax(x, n);
    return;
  }
  scale(x, 1.0f / exp_shift(x, n, mx), n);
}

// The set's 16-lane vectors for online_attention_head over F32 or half key/value rows.
struct Lanes {
  using Vec = __m512;
  static constexpr int64_t kWidth = 16;
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec set1(float a) { return _mm512_set1_ps(a); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static float reduce_add(Vec v) { return _mm512_reduce_add_ps(v); }
  static float reduce_max(Vec v) { return _mm512_reduce_max_ps(v); }
  static Vec exp(Vec v) { return exp16(v); }
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  static Vec load(const float* p, int64_t count) { return _mm512_maskz_loadu_ps(tail_mask(count), p); }
  static Vec load(const f16_t* p) { return load_f16(p); }
  static Vec load(const f16_t* p, int64_t count) { return load_f16(p, tail_mask(count)); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static void store(float* p, int64_t count, Vec v) { _mm512_mask_storeu_ps(p, tail_mask(count), v); }
  static Vec keep_first(Vec v, int64_t count, float fill) {
    return count >= 16 ? v : _mm512_mask_blend_ps(tail_mask(count), _mm512_set1_ps(fill), v);
  }
  // Transposing reduction: pairs of vectors fold within 128-bit lanes, then across them, so that
  // after four levels lane j holds the sum of p[j].
  static Vec sum_lanes(const Vec (&p)[16]) {
    Vec a[8], b[4], c[2];
    #pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
      a[i] = _mm512_add_ps(_mm512_unpacklo_ps(p[2 * i], p[2 * i + 1]), _mm512_unpackhi_ps(p[2 * i], p[2 * i + 1]));
    #pragma GCC unroll 4
    for (int i = 0; i < 4; ++i)
      b[i] = _mm512_add_ps(_mm512_shuffle_ps(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    #pragma GCC unroll 2
    for (int i = 0; i < 2; ++i)
      c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
};

void attention_head(const float* q, const float* K, const float* V, int64_t ld, int64_t n, int64_t d, float sc,
                    float* acc, AttentionState* state) {
  online_attention_head<Lanes>(q, K, V, ld, n, d, sc, acc, state);
}

void attention_head_f16(const float* q, const f16_t* K, const f16_t* V, int64_t ld, int64_t n, int64_t d, float sc,
                        float* acc, AttentionState* state) {
  online_attention_head<Lanes>(q, K, V, ld, n, d, sc, acc, state);
}

/* first argmax of x[n]: one pass for the max, one for its first position */
int64_t argmax(const float* x, int64_t n) {
  const float mx = max_of(x, n);
  const __m512 vm = _mm512_set1_ps(mx);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), vm, _CMP_EQ_OQ);
    if (hit) return i + __builtin_ctz(hit);
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __mmask16 hit = _mm512_mask_cmp_ps_mask(m, v, vm, _CMP_EQ_OQ);
    if (hit) return i + __builtin_ctz(hit);
  }
  return 0;
}

/* sum of exp(x[n] - mx) */
float sum_exp(const float* x, int64_t n, float mx) {
  const __m512 vm = _mm512_set1_ps(mx);
  __m512 sum = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) sum = _mm512_add_ps(sum, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(m, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm))));
  }
  return _mm512_reduce_add_ps(sum);
}

}  // namespace

const KernelSet& kernels_avx512() {
  // gemm_bf16_fast: convert-and-FMA has no cheaper single-rounding product, so it is gemm_bf16.
  static const KernelSet set = {"avx512", gemm_bf16, gemm_bf16, gemm_f32, gemm_nn_f32, rmsnorm,
                                swiglu, softmax, attention_head, attention_head_f16, gelu_erf, axpy, argmax, sum_exp,
                                to_f16, from_f16, /*gemm_nn_bf16=*/nullptr,
                                /*gemm_bf16_packed=*/nullptr, /*gemm_bf16_packed_fast=*/nullptr};
  return set;
}

}  // namespace scriptorium
