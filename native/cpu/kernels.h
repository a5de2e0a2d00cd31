// Compute kernels behind one runtime dispatch: avx512bf16 / avx512 / avx2 (+FMA) on x86-64, neonbf16 /
// neon on arm64, and scalar everywhere.
// Weights are BF16 (raw uint16_t bit patterns, as stored in safetensors); activations and
// accumulation are F32. Every kernel here is single-threaded over the range it is given; the
// threaded drivers (ops.h) split work across the ThreadPool.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/float16.h"

namespace scriptorium {

// Online-softmax attention of one head for one query over the keys folded in so far:
// acc[d] = sum_r exp(s_r - max) V_r and sum = sum_r exp(s_r - max), max the largest score s_r.
// Empty (no key yet): max = -inf, sum = 0, acc all 0. The attention output is acc / sum (zeros
// while sum is 0); states of disjoint key ranges merge exactly (attention.h merge_attention_states).
struct AttentionState {
  float max = -__builtin_inff();
  float sum = 0.0f;
};

struct KernelSet {
  const char* name;  // one of kernel_set_names()

  // Y[m, n] = X[m, :] . W[n, :] for m in [0, M), n in [n0, n1):
  //   X[M, K] f32 (row stride ldx), W[N, K] bf16 (row stride K), Y[M, N] f32 (row stride ldy).
  // Overwrites Y (no accumulation). K may be any size >= 1 (odd sizes included). Each Y[m, n] is
  // bitwise the same whatever M, n0 and n1 are: a batched row equals a one-row call.
  void (*gemm_bf16)(const float* X, int64_t ldx, const bf16_t* W, float* Y, int64_t ldy,
                    int64_t M, int64_t n0, int64_t n1, int64_t K);

  // Same as gemm_bf16 for fast precision: X may be rounded once to BF16 before the product (one
  // BF16 dot product per product on avx512bf16). Sets without a cheaper single-rounding product
  // (convert-and-FMA: avx512, avx2, scalar) use their gemm_bf16 here. Row invariance as gemm_bf16.
  void (*gemm_bf16_fast)(const float* X, int64_t ldx, const bf16_t* W, float* Y, int64_t ldy,
                         int64_t M, int64_t n0, int64_t n1, int64_t K);

  // Y[m, n] = X[m, :] . W[n, :] with W[N, K] f32 (row stride ldw): used for the F32 router and
  // attention score blocks. Same range semantics as gemm_bf16.
  void (*gemm_f32)(const float* X, int64_t ldx, const float* W, int64_t ldw, float* Y, int64_t ldy,
                   int64_t M, int64_t n0, int64_t n1, int64_t K);

  // Y[m, n] = X[m, :] . B[:, n] for m in [0, M), n in [n0, n1): X[M, K] f32 (row stride ldx),
  // B[K, N] f32 stored row by row (row stride ldb), Y row stride ldy. Overwrites Y. Each output
  // sums k in order with one FMA per term, so it is bitwise independent of M, n0 and n1. For
  // right operands laid out k-major: attention's P.V, and Q.K^T against transposed keys.
  void (*gemm_nn_f32)(const float* X, int64_t ldx, const float* B, int64_t ldb, float* Y, int64_t ldy,
                      int64_t M, int64_t n0, int64_t n1, int64_t K);

  // y[i] = x[i] * rsqrt(mean(x^2) + eps) * w[i]; x[n] f32, w[n] bf16, y[n] f32 (y may alias x).
  void (*rmsnorm)(const float* x, const bf16_t* w, float* y, int64_t n, float eps);

  // out[i] = silu(gate[i]) * up[i], n elements (out may alias gate).
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t n);

  // In-place softmax over x[n], n >= 1. -inf entries get 0. When every entry is -inf the result
  // is uniform (1/n, the limit for n equal logits); +inf entries share all the mass equally.
  // A NaN entry makes the output NaN.
  void (*softmax)(float* x, int64_t n);

  // Folds n more keys into one head's attention for one query (AttentionState): q[d]; key and value
  // row r at K + r*ld / V + r*ld; s_r = scale * q.K_r. Keys scoring -inf add nothing, and while
  // every score so far is -inf the state stays empty; a NaN or +inf score makes the result NaN.
  // n == 0 leaves the state as it is. acc must not alias q, K or V.
  void (*attention_head)(const float* q, const float* K, const float* V, int64_t ld, int64_t n,
                         int64_t d, float scale, float* acc, AttentionState* state);

  // attention_head over keys and values stored as IEEE half (the 16-bit KV cache): rows of d f16
  // at K + r*ld / V + r*ld, widened exactly, so the state is bitwise attention_head's on the
  // widened rows.
  void (*attention_head_f16)(const float* q, const f16_t* K, const f16_t* V, int64_t ld, int64_t n,
                             int64_t d, float scale, float* acc, AttentionState* state);

  // In place x[i] = 0.5 x (1 + erf(x / sqrt 2)), GELU as nn.GELU() computes it; absolute error
  // about 2e-7 in the vector sets (1 + erf is evaluated as erfc(|z|), with no cancellation).
  void (*gelu_erf)(float* x, int64_t n);

  // y[i] += a * x[i]
  void (*axpy)(float* y, float a, const float* x, int64_t n);

  // Index of the largest element (first one on ties); x[n], n >= 1. -inf entries are ordinary
  // values (all -inf gives 0); with NaN entries the index is unspecified.
  int64_t (*argmax)(const float* x, int64_t n);

  // sum_i exp(x[i] - mx) over x[n], mx finite and at least every x[i] (the row's maximum, as the
  // vocabulary head takes it from argmax); -inf entries add 0, and so do entries more than about 87
  // below mx in the vector sets, whose exp is ~2 ulp. One block of a streamed log-sum-exp
  // (log_sum_exp.h).
  float (*sum_exp)(const float* x, int64_t n, float mx);

  // y[i] = x[i] rounded to the nearest IEEE half (ties to even), saturated to +-65504 so a value
  // beyond the half range stays finite; NaN stays NaN. Bitwise the same in every set.
  void (*to_f16)(const float* x, f16_t* y, int64_t n);
  // y[i] = x[i] widened from IEEE half (exact).
  void (*from_f16)(const f16_t* x, float* y, int64_t n);

  // Fast precision's attention products (Q.K^T, P.V) as single BF16 dot products; nullptr in the
  // sets without them (avx512, avx2, scalar), whose attention stays F32 in fast precision too.
  // Y[m, n] = bf16(X[m, :]) . B[:, n] for m in [0, M), n in [n0, n1): X[M, K] f32 (row stride ldx),
  // each value rounded once to BF16 (nearest even); B[K, N] bf16 with pairs of k interleaved:
  // B[k, n] at B[(k / 2) * ldb + 2 * n + k % 2] (ldb >= 2 * N); Y f32 (row stride ldy), overwritten.
  // The exact products are summed in F32 a pair of k at a time, in k order, so each Y[m, n] is
  // bitwise independent of M, n0 and n1. BF16 inputs and F32 results below the normal range are
  // flushed to zero. When K is odd, B's unpaired last value B[K, n] is multiplied by zero, so it
  // must be finite.
  void (*gemm_nn_bf16)(const float* X, int64_t ldx, const bf16_t* B, int64_t ldb, float* Y, int64_t ldy,
                       int64_t M, int64_t n0, int64_t n1, int64_t K);

  // Products against BF16 weights packed once (PackedBf16 in ops.h): every vision and decoder weight
  // on the sets that have them. A tile broadcasts X and keeps 64 columns of sums in registers, with
  // no horizontal additions; tiles of one or two rows (decode) prefetch the panel ahead, since they
  // stream it from memory once. nullptr in the sets without them (avx512, avx2, scalar), which
  // read the weights as stored. Y[m, n] = X[m, :] . W[n, :] for m in [0, M), n in [n0, n1), n0 a
  // multiple of kPanelColumns; P is W[N, K] packed; X and Y as gemm_bf16. The exact variant splits
  // X into hi + lo as gemm_bf16 does, the fast one rounds it once as gemm_bf16_fast does. Each output
  // sums its pairs of k in k order in one F32 chain (hi then lo for each pair), so it is bitwise
  // independent of M, n0 and n1, but rounds differently from gemm_bf16.
  void (*gemm_bf16_packed)(const float* X, int64_t ldx, const bf16_t* P, float* Y, int64_t ldy,
                           int64_t M, int64_t n0, int64_t n1, int64_t K);
  void (*gemm_bf16_packed_fast)(const float* X, int64_t ldx, const bf16_t* P, float* Y, int64_t ldy,
                                int64_t M, int64_t n0, int64_t n1, int64_t K);
};

// The packed weight layout of gemm_bf16_packed: W[N, K] in panels of kPanelColumns rows of W
// (output columns); with pairs = ceil(K / 2), panel j starts at element j * pairs * 2 * kPanelColumns
// and holds W[64 j + c, k] at (k / 2) * 2 * kPanelColumns + 2 c + k % 2 (the k-pair interleaving of
// gemm_nn_bf16 with ldb = 128). Columns past N and the unpaired value of an odd K are zero.
// PackedBf16 (ops.h) holds weights in this layout.
constexpr int64_t kPanelColumns = 64;

// Individual sets, one per kernels_<isa>.cc; a build holds the scalar set and its architecture's
// sets (native/sources.gypi). Calling into a set the CPU lacks is undefined behaviour: outside the
// dispatcher, reach them through kernels_by_name.
const KernelSet& kernels_scalar();
#if defined(__x86_64__)
const KernelSet& kernels_avx2();
const KernelSet& kernels_avx512();
const KernelSet& kernels_avx512bf16();
#endif
#if defined(__aarch64__)
const KernelSet& kernels_neon();
const KernelSet& kernels_neonbf16();
#endif

// The names of the sets this build holds, best first, whether or not this CPU supports them
// (x86-64: avx512bf16, avx512, avx2, scalar; arm64: neonbf16, neon, scalar).
const std::vector<const char*>& kernel_set_names();

// The best kernel set this CPU supports, or the one named by SCRIPTORIUM_KERNELS (one of
// kernel_set_names()) when set; an unsupported name falls back to the best.
const KernelSet& active_kernels();

// A named kernel set, or nullptr when the CPU cannot run it or the name is unknown.
const KernelSet* kernels_by_name(const char* name);

// Rotate-half RoPE (Llama/NEOX) in place for `heads` heads of head_dim d laid out head-major in x:
//   for i < d/2: angle = pos * theta^(-2i/d); x'[i] = x[i] cos - x[i+d/2] sin;
//   x'[i+d/2] = x[i+d/2] cos + x[i] sin.   cos/sin computed in F32.
void rope_rotate_half(float* x, int64_t heads, int64_t d, int64_t pos, float theta);

}  // namespace scriptorium
