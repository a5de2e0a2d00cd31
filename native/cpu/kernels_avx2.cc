// AVX2 + FMA kernel set: 8-lane F32 FMA; bf16 weights widened with a 16-bit shift.
// Compiled with -mavx2 -mfma -mf16c; only kernels_avx2() is exported.
#include <immintrin.h>

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

inline __m256i tail_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline __m256 load_tail(const float* p, int64_t n) { return _mm256_maskload_ps(p, tail_mask(n)); }
inline void store_tail(float* p, int64_t n, __m256 v) { _mm256_maskstore_ps(p, tail_mask(n), v); }

inline __m256 widen(__m128i b) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
}
inline __m256 load_w(const bf16_t* p) {
  return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256 load_w(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load_w(const bf16_t* p, int64_t n) {
  alignas(16) bf16_t buf[8] = {};
  for (int64_t i = 0; i < n; ++i) buf[i] = p[i];
  return widen(_mm_load_si128(reinterpret_cast<const __m128i*>(buf)));
}
inline __m256 load_w(const float* p, int64_t n) { return load_tail(p, n); }

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* exp(x[8]), ~2 ulp; exp(x) = 0 for x < -86.9 (incl. -inf), inf above ln(FLT_MAX) */
inline __m256 exp8(__m256 x) {
  const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-86.9f), _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_set1_ps(88.75f), x);
  x = _mm256_max_ps(_mm256_set1_ps(-86.9f), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2^n as 2^(n-1) * 2 so that n = 128 (x near ln(FLT_MAX)) still has a normal exponent.
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(126)), 23);
  const __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), _mm256_set1_ps(2.0f));
  return _mm256_andnot_ps(tiny, y);
}

template <int MR, int NR>
inline void fma_step(__m256 (&acc)[MR][NR], const __m256 (&w)[NR], const __m256 (&x)[MR]) {
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(x[i], w[j], acc[i][j]);
}

/* Y[MR, NR] = X[MR,K] @ W[NR,K]^T: each W vector is widened once and reused for MR rows */
template <int MR, int NR, typename WT>
void tile(const float* X, int64_t ldx, const WT* W, int64_t ldw, float* Y, int64_t ldy, int64_t K,
          WeightPrefetch<WT> ahead) {
  __m256 acc[MR][NR];
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    if (k * int64_t(sizeof(WT)) % 64 == 0)  // one prefetch per 64-byte line
      for (int64_t r = 0; r < ahead.count; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(ahead.row + r * ahead.stride + k), _MM_HINT_T0);
    __m256 w[NR], x[MR];
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) w[j] = load_w(W + j * ldw + k);
    #pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) x[i] = _mm256_loadu_ps(X + i * ldx + k);
    fma_step(acc, w, x);
  }
  if (k < K) {
    __m256 w[NR], x[MR];
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) w[j] = load_w(W + j * ldw + k, K - k);
    #pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) x[i] = load_tail(X + i * ldx + k, K - k);
    fma_step(acc, w, x);
  }
  #pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) Y[i * ldy + j] = hsum(acc[i][j]);
}

template <typename WT>
using TileFn = void (*)(const float*, int64_t, const WT*, int64_t, float*, int64_t, int64_t,
                        WeightPrefetch<WT>);

// kTiles<WT>[MR - 1][NR - 1]: 3x4 tiles (12 accumulators + 4 weights = 16 ymm); NR up to 6 for
// MR == 1, where 4 columns give too few FMA chains (8 would spill).
template <typename WT>
constexpr TileFn<WT> kTiles[3][6] = {
    {tile<1, 1, WT>, tile<1, 2, WT>, tile<1, 3, WT>, tile<1, 4, WT>, tile<1, 5, WT>,
     tile<1, 6, WT>},
    {tile<2, 1, WT>, tile<2, 2, WT>, tile<2, 3, WT>, tile<2, 4, WT>},
    {tile<3, 1, WT>, tile<3, 2, WT>, tile<3, 3, WT>, tile<3, 4, WT>},
};

// Up to 3 rows per tile; 6 columns for a single row, where 4 give too few FMA chains. X blocks
// (mc rows) and W panels (nc rows) are sized to stay in L2.
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
  const int64_t nb = M == 1 ? 6 : 4;
  const int64_t mc = max64(3, kL2Block / (K * 4) / 3 * 3);
  const int64_t nc = max64(nb, kL2Block / (K * int64_t(sizeof(WT))) / nb * nb);
  gemm_blocked(Tiles{}, GemmBlocking{3, nb, mc, nc, true}, X, ldx, W, ldw, Y, ldy, M, n0, n1, K);
}

void gemm_bf16(const float* X, int64_t ldx, const bf16_t* W, float* Y, int64_t ldy, int64_t M,
               int64_t n0, int64_t n1, int64_t K) {
  gemm(X, ldx, W, K, Y, ldy, M, n0, n1, K);
}

void gemm_f32(const float* X, int64_t ldx, const float* W, int64_t ldw, float* Y, int64_t ldy,
              int64_t M, int64_t n0, int64_t n1, int64_t K) {
  gemm(X, ldx, W, ldw, Y, ldy, M, n0, n1, K);
}

/* Y[MR, cols] = X[MR,K] @ B[K, cols], cols <= 8 * NR (the last vector holds `last` columns) */
template <int MR, int NR>
void nn_tile(const float* X, int64_t ldx, const float* B, int64_t ldb, float* Y, int64_t ldy, int64_t K,
             int64_t last) {
  __m256 acc[MR][NR];
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 2
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m256 b[NR];
    #pragma GCC unroll 2
    for (int j = 0; j < NR; ++j)
      b[j] = j + 1 < NR || last == 8 ? _mm256_loadu_ps(B + k * ldb + 8 * j) : load_tail(B + k * ldb + 8 * j, last);
    #pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m256 x = _mm256_broadcast_ss(X + i * ldx + k);
      #pragma GCC unroll 2
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(x, b[j], acc[i][j]);
    }
  }
  #pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
    #pragma GCC unroll 2
    for (int j = 0; j < NR; ++j) {
      if (j + 1 < NR || last == 8) {
        _mm256_storeu_ps(Y + i * ldy + 8 * j, acc[i][j]);
      } else {
        store_tail(Y + i * ldy + 8 * j, last, acc[i][j]);
      }
    }
}

using NnTileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, int64_t);

// kNnTiles[MR - 1][NR - 1]: up to 4 rows x 16 columns, 8 accumulators.
constexpr NnTileFn kNnTiles[4][2] = {
    {nn_tile<1, 1>, nn_tile<1, 2>},
    {nn_tile<2, 1>, nn_tile<2, 2>},
    {nn_tile<3, 1>, nn_tile<3, 2>},
    {nn_tile<4, 1>, nn_tile<4, 2>},
};

struct NnTiles {
  void operator()(int64_t mr, int64_t cols, const float* X, int64_t ldx, const float* B, int64_t ldb, float* Y,
                  int64_t ldy, int64_t K) const {
    const int64_t vectors = (cols + 7) / 8;
    kNnTiles[mr - 1][vectors - 1](X, ldx, B, ldb, Y, ldy, K, cols - 8 * (vectors - 1));
  }
};

/* Y[M, n0:n1] = X[M,K] @ B[K, n0:n1] in tiles of 4 rows x 16 columns */
void gemm_nn_f32(const float* X, int64_t ldx, const float* B, int64_t ldb, float* Y, int64_t ldy,
                 int64_t M, int64_t n0, int64_t n1, int64_t K) {
  gemm_nn_blocked(NnTiles{}, 4, 16, X, ldx, B, ldb, Y, ldy, M, n0, n1, K);
}

/* 1 + erf(v / sqrt 2) for 8 lanes: erfc(|z|) ~ poly(t) exp(-z^2), t = 1 / (1 + p|z|) (Abramowitz-Stegun
   7.1.26, |error| < 1.5e-7), then 2 - erfc for v >= 0 */
inline __m256 one_plus_erf8(__m256 v) {
  const __m256 abs = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
  const __m256 z = _mm256_mul_ps(abs, _mm256_set1_ps(0.70710678118654752f));
  const __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(z, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.0f)));
  __m256 p = _mm256_set1_ps(1.061405429f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  const __m256 erfc = _mm256_mul_ps(_mm256_mul_ps(p, t), exp8(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(z, z))));
  const __m256 positive = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ);
  return _mm256_blendv_ps(erfc, _mm256_sub_ps(_mm256_set1_ps(2.0f), erfc), positive);
}

/* x[n] = 0.5 x (1 + erf(x / sqrt 2)) */
void gelu_erf(float* x, int64_t n) {
  const __m256 half = _mm256_set1_ps(0.5f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_mul_ps(half, v), one_plus_erf8(v)));
  }
  if (i < n) {
    const __m256 v = load_tail(x + i, n - i);
    store_tail(x + i, n - i, _mm256_mul_ps(_mm256_mul_ps(half, v), one_plus_erf8(v)));
  }
}

/* a[n] . b[n] */
inline float dot(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  if (i < n) acc = _mm256_fmadd_ps(load_tail(a + i, n - i), load_tail(b + i, n - i), acc);
  return hsum(acc);
}

/* IEEE half rows of the KV cache, widened exactly */
inline __m256 load_f16(const f16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256 load_f16(const f16_t* p, int64_t n) {
  alignas(16) f16_t buf[8] = {};
  for (int64_t i = 0; i < n; ++i) buf[i] = p[i];
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(buf)));
}

/* y[n] = x[n] * rsqrt(mean(x^2) + eps) * w[n] */
void rmsnorm(const float* x, const bf16_t* w, float* y, int64_t n, float eps) {
  const float r = 1.0f / __builtin_sqrtf(dot(x, x, n) / static_cast<float>(n) + eps);
  const __m256 vr = _mm256_set1_ps(r);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vr);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, load_w(w + i)));
  }
  if (i < n) {
    const __m256 v = _mm256_mul_ps(load_tail(x + i, n - i), vr);
    store_tail(y + i, n - i, _mm256_mul_ps(v, load_w(w + i, n - i)));
  }
}

inline __m256 silu_mul(__m256 g, __m256 u) {
  const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

/* out[n] = gate[n] / (1 + exp(-gate[n])) * up[n] */
void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, silu_mul(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  if (i < n)
    store_tail(out + i, n - i, silu_mul(load_tail(gate + i, n - i), load_tail(up + i, n - i)));
}

/* max(x[n]), -inf for n == 0; NaN entries are skipped */
inline float max_of(const float* x, int64_t n) {
  const __m256 ninf = _mm256_set1_ps(-kInf);
  __m256 mx = ninf;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) mx = _mm256_max_ps(_mm256_loadu_ps(x + i), mx);
  if (i < n) {
    const __m256 m = _mm256_castsi256_ps(tail_mask(n - i));
    mx = _mm256_max_ps(_mm256_blendv_ps(ninf, load_tail(x + i, n - i), m), mx);
  }
  return hmax(mx);
}

/* x[n] <- exp(x[n] - mx); returns the sum */
inline float exp_shift(float* x, int64_t n, float mx) {
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 sum = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    _mm256_storeu_ps(x + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (i < n) {
    const __m256 m = _mm256_castsi256_ps(tail_mask(n - i));
    const __m256 e = _mm256_and_ps(m, exp8(_mm256_sub_ps(load_tail(x + i, n - i), vm)));
    store_tail(x + i, n - i, e);
    sum = _mm256_add_ps(sum, e);
  }
  return hsum(sum);
}

/* x[n] *= a */
inline void scale(float* x, float a, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), va));
  if (i < n) store_tail(x + i, n - i, _mm256_mul_ps(load_tail(x + i, n - i), va));
}

/* y[n] += a * x[n] */
void axpy(float* y, float a, const float* x, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  if (i < n)
    store_tail(y + i, n - i, _mm256_fmadd_ps(va, load_tail(x + i, n - i), load_tail(y + i, n - i)));
}

/* y[n] = x[n] widened from IEEE half */
void from_f16(const f16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, load_f16(x + i));
  if (i < n) store_tail(y + i, n - i, load_f16(x + i, n - i));
}

/* y[n] = x[n] to IEEE half, nearest even, saturated to +-65504 (min/max order keeps NaN) */
void to_f16(const float* x, f16_t* y, int64_t n) {
  const __m256 hi = _mm256_set1_ps(65504.0f), lo = _mm256_set1_ps(-65504.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_max_ps(lo, _mm256_min_ps(hi, _mm256_loadu_ps(x + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  if (i < n) {
    const __m256 v = _mm256_max_ps(lo, _mm256_min_ps(hi, load_tail(x + i, n - i)));
    alignas(16) f16_t buf[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(buf), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    for (int64_t j = 0; i + j < n; ++j) y[i + j] = buf[j];
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

// The set's 8-lane vectors for online_attention_head over F32 or half key/value rows.
struct Lanes {
  using Vec = __m256;
  static constexpr int64_t kWidth = 8;
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec set1(float a) { return _mm256_set1_ps(a); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static float reduce_add(Vec v) { return hsum(v); }
  static float reduce_max(Vec v) { return hmax(v); }
  static Vec exp(Vec v) { return exp8(v); }
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  static Vec load(const float* p, int64_t count) { return load_tail(p, count); }
  static Vec load(const f16_t* p) { return load_f16(p); }
  static Vec load(const f16_t* p, int64_t count) { return load_f16(p, count); }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static void store(float* p, int64_t count, Vec v) { store_tail(p, count, v); }
  static Vec keep_first(Vec v, int64_t count, float fill) {
    return count >= 8 ? v : _mm256_blendv_ps(_mm256_set1_ps(fill), v, _mm256_castsi256_ps(tail_mask(count)));
  }
  // Transposing reduction: two levels of pairwise horizontal adds, then the 128-bit halves.
  static Vec sum_lanes(const Vec (&p)[8]) {
    const Vec a0 = _mm256_hadd_ps(p[0], p[1]), a1 = _mm256_hadd_ps(p[2], p[3]);
    const Vec a2 = _mm256_hadd_ps(p[4], p[5]), a3 = _mm256_hadd_ps(p[6], p[7]);
    const Vec b0 = _mm256_hadd_ps(a0, a1), b1 = _mm256_hadd_ps(a2, a3);
    return _mm256_add_ps(_mm256_permute2f128_ps(b0, b1, 0x20), _mm256_permute2f128_ps(b0, b1, 0x31));
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
  const __m256 vm = _mm256_set1_ps(mx);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), vm, _CMP_EQ_OQ));
    if (hit) return i + __builtin_ctz(static_cast<unsigned>(hit));
  }
  for (; i < n; ++i)
    if (x[i] == mx) return i;
  return 0;
}

/* sum of exp(x[n] - mx) */
float sum_exp(const float* x, int64_t n, float mx) {
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 sum = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) sum = _mm256_add_ps(sum, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm)));
  if (i < n) {
    const __m256 m = _mm256_castsi256_ps(tail_mask(n - i));
    sum = _mm256_add_ps(sum, _mm256_and_ps(m, exp8(_mm256_sub_ps(load_tail(x + i, n - i), vm))));
  }
  return hsum(sum);
}

}  // namespace

const KernelSet& kernels_avx2() {
  // gemm_bf16_fast: convert-and-FMA has no cheaper single-rounding product, so it is gemm_bf16.
  static const KernelSet set = {"avx2", gemm_bf16, gemm_bf16, gemm_f32, gemm_nn_f32, rmsnorm,
                                swiglu, softmax, attention_head, attention_head_f16, gelu_erf, axpy, argmax, sum_exp,
                                to_f16, from_f16, /*gemm_nn_bf16=*/nullptr,
                                /*gemm_bf16_packed=*/nullptr, /*gemm_bf16_packed_fast=*/nullptr};
  return set;
}

}  // namespace scriptorium
