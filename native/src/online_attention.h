// One attention head for one query with an online softmax over blocks of keys, shared by the vector
// kernel sets (kernels_avx2.cc, kernels_avx512.cc): out[d] = softmax_r(scale * q . K_r) V_r without a
// score row of n floats. Rows names the key/value storage (T: float or f16_t) and supplies, compiled
// for its kernel set's instructions:
//   dot(q, row, d), axpy(out, a, row, d)  over one key or value row;
//   scale(x, a, n)                        x[i] *= a;
//   max_of(x, n)                          the largest of x[n];
//   exp_shift(x, n, mx)                   x[i] = exp(x[i] - mx) in place, returning their sum.
// Builtins only, no std:: inline functions: each kernel file compiles this with its own instruction
// set, and a shared inline symbol could be taken from the wrong one (see native/test/run.sh).
#pragma once
#include <cstdint>

namespace scriptorium {

template <typename Rows>
void online_attention_head(const float* q, const typename Rows::T* K, const typename Rows::T* V, int64_t ld, int64_t n,
                           int64_t d, float sc, float* out) {
  constexpr int64_t kBlock = 64;
  constexpr float kNegInf = -__builtin_inff();
  alignas(64) float s[kBlock];
  float mx = kNegInf;
  float sum = 0.0f;
  for (int64_t i = 0; i < d; ++i) out[i] = 0.0f;
  for (int64_t r0 = 0; r0 < n; r0 += kBlock) {
    const int64_t nb = n - r0 < kBlock ? n - r0 : kBlock;
    for (int64_t j = 0; j < nb; ++j) s[j] = sc * Rows::dot(q, K + (r0 + j) * ld, d);
    const float bmx = Rows::max_of(s, nb);
    if (bmx > mx) {
      const float c = __builtin_expf(mx - bmx);
      sum *= c;
      Rows::scale(out, c, d);
      mx = bmx;
    }
    if (mx == kNegInf) continue;  // every score so far is -inf
    sum += Rows::exp_shift(s, nb, mx);
    for (int64_t j = 0; j < nb; ++j) Rows::axpy(out, s[j], V + (r0 + j) * ld, d);
  }
  if (sum > 0.0f) Rows::scale(out, 1.0f / sum, d);
}

}  // namespace scriptorium
