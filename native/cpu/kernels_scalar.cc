// Plain C++ kernel set: the reference every vector set is tested against, and the fallback on
// CPUs without AVX2. Also home of rope_rotate_half, which every set shares.
#include <cmath>
#include <limits>

#include "cpu/kernels.h"

namespace scriptorium {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

inline float to_f32(float v) { return v; }
inline float to_f32(bf16_t v) { return bf16_to_f32(v); }

// The compiler's IEEE half arithmetic type: GCC 12 has _Float16 in C++ on x86-64 but not on arm64,
// where __fp16 is IEEE half too (conversions round to nearest even).
#if defined(__aarch64__)
using float16 = __fp16;
#else
using float16 = _Float16;
#endif

// IEEE half rows of the KV cache (f16_t is the same integer type as bf16_t, hence a wrapper type).
struct Half {
  f16_t bits;
};
inline float to_f32(Half h) {
  float16 v;
  __builtin_memcpy(&v, &h.bits, 2);
  return static_cast<float>(v);
}

/* Y[M, n0:n1] = X[M,K] @ W[n0:n1,K]^T */
template <typename WT>
void gemm(const float* X, int64_t ldx, const WT* W, int64_t ldw, float* Y, int64_t ldy, int64_t M,
          int64_t n0, int64_t n1, int64_t K) {
  for (int64_t m = 0; m < M; ++m) {
    const float* x = X + m * ldx;
    for (int64_t n = n0; n < n1; ++n) {
      const WT* w = W + n * ldw;
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += x[k] * to_f32(w[k]);
      Y[m * ldy + n] = acc;
    }
  }
}

void gemm_bf16(const float* X, int64_t ldx, const bf16_t* W, float* Y, int64_t ldy, int64_t M,
               int64_t n0, int64_t n1, int64_t K) {
  gemm(X, ldx, W, K, Y, ldy, M, n0, n1, K);
}

void gemm_f32(const float* X, int64_t ldx, const float* W, int64_t ldw, float* Y, int64_t ldy,
              int64_t M, int64_t n0, int64_t n1, int64_t K) {
  gemm(X, ldx, W, ldw, Y, ldy, M, n0, n1, K);
}

/* y[n] = x[n] * rsqrt(mean(x^2) + eps) * w[n] */
void rmsnorm(const float* x, const bf16_t* w, float* y, int64_t n, float eps) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float r = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * r * bf16_to_f32(w[i]);
}

/* out[n] = gate[n] / (1 + exp(-gate[n])) * up[n] */
void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

/* x[n] <- softmax(x[n]); the non-finite-max cases follow kernels.h */
void softmax(float* x, int64_t n) {
  float mx = -kInf;
  for (int64_t i = 0; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  if (std::isinf(mx)) {
    int64_t hits = 0;
    bool nan = false;
    for (int64_t i = 0; i < n; ++i) {
      hits += x[i] == mx;
      nan |= std::isnan(x[i]);
    }
    const float p = nan ? std::numeric_limits<float>::quiet_NaN() : 1.0f / static_cast<float>(hits);
    for (int64_t i = 0; i < n; ++i) x[i] = nan || x[i] == mx ? p : 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

/* folds n keys into one head's state (kernels.h AttentionState), online over blocks of kBlock keys; KV: float or Half */
template <typename KV>
void attend_head(const float* q, const KV* K, const KV* V, int64_t ld, int64_t n, int64_t d, float scale,
                 float* acc, AttentionState* state) {
  constexpr int64_t kBlock = 64;
  float s[kBlock];
  float mx = state->max;
  float sum = state->sum;
  for (int64_t r0 = 0; r0 < n; r0 += kBlock) {
    const int64_t nb = n - r0 < kBlock ? n - r0 : kBlock;
    float bmx = -kInf;
    for (int64_t j = 0; j < nb; ++j) {
      const KV* k = K + (r0 + j) * ld;
      float dot = 0.0f;
      for (int64_t i = 0; i < d; ++i) dot += q[i] * to_f32(k[i]);
      s[j] = scale * dot;
      bmx = s[j] > bmx ? s[j] : bmx;
    }
    if (bmx > mx) {
      const float c = std::exp(mx - bmx);
      sum *= c;
      for (int64_t i = 0; i < d; ++i) acc[i] *= c;
      mx = bmx;
    }
    if (mx == -kInf) continue;  // every score so far is -inf
    for (int64_t j = 0; j < nb; ++j) {
      const float p = std::exp(s[j] - mx);
      const KV* v = V + (r0 + j) * ld;
      sum += p;
      for (int64_t i = 0; i < d; ++i) acc[i] += p * to_f32(v[i]);
    }
  }
  state->max = mx;
  state->sum = sum;
}

void attention_head(const float* q, const float* K, const float* V, int64_t ld, int64_t n, int64_t d, float scale,
                    float* acc, AttentionState* state) {
  attend_head(q, K, V, ld, n, d, scale, acc, state);
}

void attention_head_f16(const float* q, const f16_t* K, const f16_t* V, int64_t ld, int64_t n, int64_t d,
                        float scale, float* acc, AttentionState* state) {
  static_assert(sizeof(Half) == sizeof(f16_t), "Half is a bare f16_t");
  attend_head(q, reinterpret_cast<const Half*>(K), reinterpret_cast<const Half*>(V), ld, n, d, scale, acc, state);
}

/* y[n] = x[n] to IEEE half, nearest even, saturated to +-65504 */
void to_f16(const float* x, f16_t* y, int64_t n) {
  constexpr float kHalfMax = 65504.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] > kHalfMax ? kHalfMax : x[i] < -kHalfMax ? -kHalfMax : x[i];
    const float16 h = static_cast<float16>(v);
    __builtin_memcpy(y + i, &h, 2);
  }
}

/* y[n] = x[n] widened from IEEE half */
void from_f16(const f16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = to_f32(Half{x[i]});
}

/* Y[M, n0:n1] = X[M,K] @ B[K, n0:n1] */
void gemm_nn_f32(const float* X, int64_t ldx, const float* B, int64_t ldb, float* Y, int64_t ldy,
                 int64_t M, int64_t n0, int64_t n1, int64_t K) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = n0; n < n1; ++n) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc = std::fma(X[m * ldx + k], B[k * ldb + n], acc);
      Y[m * ldy + n] = acc;
    }
}

/* x[n] = 0.5 x (1 + erf(x / sqrt 2)) */
void gelu_erf(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

/* y[n] += a * x[n] */
void axpy(float* y, float a, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

/* first argmax of x[n] */
int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) best = x[i] > x[best] ? i : best;
  return best;
}

/* sum of exp(x[n] - mx) */
float sum_exp(const float* x, int64_t n, float mx) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - mx);
  return sum;
}

}  // namespace

const KernelSet& kernels_scalar() {
  // gemm_bf16_fast: convert-and-FMA has no cheaper single-rounding product, so it is gemm_bf16.
  static const KernelSet set = {"scalar", gemm_bf16, gemm_bf16, gemm_f32, gemm_nn_f32, rmsnorm,
                                swiglu, softmax, attention_head, attention_head_f16, gelu_erf, axpy, argmax, sum_exp,
                                to_f16, from_f16, /*gemm_nn_bf16=*/nullptr,
                                /*gemm_bf16_packed=*/nullptr, /*gemm_bf16_packed_fast=*/nullptr};
  return set;
}

/* x[heads, d] rotated in place at position pos (rotate-half pairs i, i + d/2) */
void rope_rotate_half(float* x, int64_t heads, int64_t d, int64_t pos, float theta) {
  const int64_t half = d / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(d);
    const float inv_freq = 1.0f / std::pow(theta, exponent);
    const float angle = static_cast<float>(pos) * inv_freq;
    const float c = std::cos(angle);
    const float s = std::sin(angle);
    for (int64_t h = 0; h < heads; ++h) {
      float* p = x + h * d;
      const float a = p[i];
      const float b = p[i + half];
      p[i] = a * c - b * s;
      p[i + half] = b * c + a * s;
    }
  }
}

}  // namespace scriptorium
