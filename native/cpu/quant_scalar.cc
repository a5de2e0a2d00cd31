// Plain C++ int8 product: the reference the vector sets are tested against, and the fallback on
// CPUs without AVX2.
#include "cpu/quant_int8.h"

namespace scriptorium {

namespace {

/* Y[M, n0:n1] = X[M,K] @ (q * scale)[n0:n1,K]^T */
void gemm_int8(const float* X, int64_t ldx, const Int8Weights& W, float* Y, int64_t ldy, int64_t M, int64_t n0,
               int64_t n1) {
  for (int64_t m = 0; m < M; ++m) {
    const float* x = X + m * ldx;
    for (int64_t n = n0; n < n1; ++n) {
      const int8_t* q = W.q + n * W.K;
      const float* scales = W.scales + n * W.groups;
      float acc = 0.0f;
      for (int64_t k = 0; k < W.K; ++k) acc += x[k] * (static_cast<float>(q[k]) * scales[k / W.group]);
      Y[m * ldy + n] = acc;
    }
  }
}

constexpr QuantKernelSet kSet = {"scalar", 0, Int8Layout::Rows, gemm_int8, nullptr};

}  // namespace

const QuantKernelSet& quant_scalar() { return kSet; }

}  // namespace scriptorium
