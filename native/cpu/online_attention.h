// One attention head for one query, folding keys into an online-softmax state (kernels.h
// AttentionState), shared by the vector kernel sets (kernels_avx2.cc, kernels_avx512.cc). Decode
// attention over a long cache streams its rows once, so the loop is shaped to keep up with memory:
//   - a block of kWidth keys is scored together: each key's dot product stays a vector of partial
//     sums, and one transposing reduction (sum_lanes) turns the block's vectors into one vector of
//     its scores, instead of a horizontal sum per key;
//   - the block's weighted values are added into the accumulator in chunks of up to 8 vectors held
//     in registers, so the accumulator is loaded and stored once per block, not once per key.
// Lanes supplies, compiled for its kernel set's instructions, a vector type Vec of kWidth floats
// and zero, set1, add, mul, fmadd, reduce_add, reduce_max, exp (0 for -inf), load / store of
// whole vectors and of their first `count` lanes (the rest read as 0, or left alone) from float or
// f16_t rows, keep_first(v, count, fill) (lanes from count on set to fill), and
// sum_lanes(p[kWidth]) whose lane j is the sum of p[j]'s lanes.
// Builtins only, no std:: inline functions: each kernel file compiles this with its own instruction
// set, and a shared inline symbol could be taken from the wrong one (see native/test/run.sh).
#pragma once
#include <cstdint>

#include "cpu/kernels.h"

namespace scriptorium {

/* p[j] = sum over d of q[i] * row_j[i] as kWidth partial sums, for the nb (<= kWidth) rows at K + j*ld */
template <typename Lanes, typename T>
inline void score_partials(const float* q, const T* K, int64_t ld, int64_t nb, int64_t d,
                           typename Lanes::Vec (&p)[Lanes::kWidth]) {
  using Vec = typename Lanes::Vec;
  constexpr int64_t W = Lanes::kWidth;
  #pragma GCC unroll 16
  for (int64_t j = 0; j < W; ++j) p[j] = Lanes::zero();
  int64_t i = 0;
  for (; i + W <= d; i += W) {
    const Vec qv = Lanes::load(q + i);
    #pragma GCC unroll 16
    for (int64_t j = 0; j < W; ++j)
      if (j < nb) p[j] = Lanes::fmadd(qv, Lanes::load(K + j * ld + i), p[j]);
  }
  if (i < d) {
    const Vec qv = Lanes::load(q + i, d - i);
    #pragma GCC unroll 16
    for (int64_t j = 0; j < W; ++j)
      if (j < nb) p[j] = Lanes::fmadd(qv, Lanes::load(K + j * ld + i, d - i), p[j]);
  }
}

/* out[c0:c0+width] += sum_j e[j] * V_j[c0:c0+width] over nb rows at V + j*ld; width <= kChunk * kWidth */
template <typename Lanes, typename T>
inline void add_weighted_rows(const float* e, const T* V, int64_t ld, int64_t nb, int64_t c0, int64_t width,
                              float* out) {
  using Vec = typename Lanes::Vec;
  constexpr int64_t W = Lanes::kWidth, kChunk = 8;
  const int64_t full = width / W, tail = width % W;
  Vec acc[kChunk];
  #pragma GCC unroll 8
  for (int64_t v = 0; v < kChunk; ++v)
    acc[v] = v < full ? Lanes::load(out + c0 + v * W) : v == full && tail ? Lanes::load(out + c0 + v * W, tail) : Lanes::zero();
  for (int64_t j = 0; j < nb; ++j) {
    const Vec w = Lanes::set1(e[j]);
    const T* row = V + j * ld + c0;
    #pragma GCC unroll 8
    for (int64_t v = 0; v < kChunk; ++v)
      if (v < full) acc[v] = Lanes::fmadd(w, Lanes::load(row + v * W), acc[v]);
      else if (v == full && tail) acc[v] = Lanes::fmadd(w, Lanes::load(row + v * W, tail), acc[v]);
  }
  #pragma GCC unroll 8
  for (int64_t v = 0; v < kChunk; ++v)
    if (v < full) Lanes::store(out + c0 + v * W, acc[v]);
    else if (v == full && tail) Lanes::store(out + c0 + v * W, tail, acc[v]);
}

/* folds n more keys into one head's online-softmax state (kernels.h AttentionState): acc[d], state */
template <typename Lanes, typename T>
void online_attention_head(const float* q, const T* K, const T* V, int64_t ld, int64_t n, int64_t d, float sc,
                           float* acc, AttentionState* state) {
  using Vec = typename Lanes::Vec;
  constexpr int64_t W = Lanes::kWidth, kChunkFloats = 8 * W;
  constexpr float kNegInf = -__builtin_inff();
  alignas(64) float e[W];
  Vec p[W];
  float mx = state->max;
  float sum = state->sum;
  for (int64_t r0 = 0; r0 < n; r0 += W) {
    const int64_t nb = n - r0 < W ? n - r0 : W;
    const T* values = V + r0 * ld;
    score_partials<Lanes>(q, K + r0 * ld, ld, nb, d, p);
    const Vec s = Lanes::keep_first(Lanes::mul(Lanes::set1(sc), Lanes::sum_lanes(p)), nb, kNegInf);
    const float bmx = Lanes::reduce_max(s);
    if (bmx > mx) {
      const float c = __builtin_expf(mx - bmx);
      sum *= c;
      for (int64_t i = 0; i < d; ++i) acc[i] *= c;
      mx = bmx;
    }
    if (mx == kNegInf) continue;  // every score so far is -inf
    const Vec ev = Lanes::exp(Lanes::add(s, Lanes::set1(-mx)));
    sum += Lanes::reduce_add(ev);
    Lanes::store(e, ev);
    for (int64_t c0 = 0; c0 < d; c0 += kChunkFloats)
      add_weighted_rows<Lanes>(e, values, ld, nb, c0, d - c0 < kChunkFloats ? d - c0 : kChunkFloats, acc);
  }
  state->max = mx;
  state->sum = sum;
}

}  // namespace scriptorium
