// Fast precision's attention: the kernel sets' gemm_nn_bf16 against float64. Prints one line per
// test and "N passed, M failed"; exits non-zero on any failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../src/kernels.h"
#include "test_harness.h"

using namespace scriptorium;

namespace {

using scriptorium_test::finish;
using scriptorium_test::run;

// gemm_nn_bf16 against float64 on the BF16-rounded activations: |y - ref| <= tol * sum_k |x_k b_k|.
// The products of BF16 values are exact in F32, so only the F32 accumulation rounds (as
// gemm_bf16_fast's bound in kernels_test).
constexpr double kDotTol = 2e-5;

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0, double e = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d, e);
  return buf;
}

std::mt19937 g_rng(31337);
float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(g_rng); }
double rounded(float x) { return bf16_to_f32(f32_to_bf16(x)); }

// ---------------------------------------------------------------- gemm_nn_bf16

/* Y[M, n0:n1] for X[M, K] (magnitudes 2^-8..2^8) and B[K, N] in pairs, checked against float64 */
std::string check_gemm_nn_bf16(const KernelSet& ks, int64_t M, int64_t N, int64_t K, double& worst) {
  const int64_t ldx = K + 3, ldb = 2 * N + 6, ldy = N + 5;
  std::vector<float> X(M * ldx);
  for (float& x : X) x = std::ldexp(uniform(-1, 1), static_cast<int>(uniform(-8, 8)));
  std::vector<bf16_t> B((K + 1) / 2 * ldb, f32_to_bf16(7.0f));
  std::vector<double> b(K * N);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) {
      const bf16_t v = f32_to_bf16(uniform(-1, 1));
      B[k / 2 * ldb + 2 * n + k % 2] = v;
      b[k * N + n] = bf16_to_f32(v);
    }
  if (K % 2 == 1)  // the unpaired last value meets a zero: a large finite one must not show
    for (int64_t n = 0; n < N; ++n) B[K / 2 * ldb + 2 * n + 1] = f32_to_bf16(1e30f);
  std::vector<float> Y(M * ldy, -7.0f), one(ldy, -7.0f);
  const int64_t split = N / 3;
  ks.gemm_nn_bf16(X.data(), ldx, B.data(), ldb, Y.data(), ldy, M, 0, split, K);
  ks.gemm_nn_bf16(X.data(), ldx, B.data(), ldb, Y.data(), ldy, M, split, N, K);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = N; n < ldy; ++n)
      if (Y[m * ldy + n] != -7.0f) return fmt("M=%g N=%g K=%g: wrote past column N", M, N, K);
    ks.gemm_nn_bf16(X.data() + m * ldx, ldx, B.data(), ldb, one.data(), ldy, 1, 0, N, K);
    if (!std::equal(one.begin(), one.begin() + N, Y.begin() + m * ldy))
      return fmt("M=%g N=%g K=%g: row %g differs from a one-row call", M, N, K, m);
    for (int64_t n = 0; n < N; ++n) {
      double want = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = rounded(X[m * ldx + k]) * b[k * N + n];
        want += p;
        mag += std::fabs(p);
      }
      const double err = std::fabs(Y[m * ldy + n] - want) / (mag + 1e-300);
      worst = std::max(worst, err);
      if (!(err <= kDotTol)) return fmt("M=%g N=%g K=%g m=%g: rel err %.3g", M, N, K, m, err);
    }
  }
  return "";
}

void test_gemm_nn_bf16() {
  for (const char* name : {"scalar", "avx2", "avx512", "avx512bf16"}) {
    const KernelSet* ks = kernels_by_name(name);
    if (ks == nullptr) {
      std::printf("skip  %s/gemm_nn_bf16 (the CPU lacks the set)\n", name);
      continue;
    }
    if (std::strcmp(name, "avx512bf16") != 0) {
      run(std::string(name) + "/gemm_nn_bf16 is absent: its attention stays F32", [&] {
        return ks->gemm_nn_bf16 == nullptr ? "" : "the set has no BF16 dot products, so it must leave gemm_nn_bf16 null";
      });
      continue;
    }
    run("avx512bf16/gemm_nn_bf16 matches float64 on BF16-rounded activations, row invariant", [&] {
      double worst = 0;
      for (int64_t M : {1, 5, 6, 7, 13, 24})
        for (int64_t N : {1, 15, 16, 17, 64, 80, 197})
          for (int64_t K : {1, 2, 3, 7, 64, 80, 128, 197}) {
            const std::string e = check_gemm_nn_bf16(*ks, M, N, K, worst);
            if (!e.empty()) return e;
          }
      std::printf("      max rel err %.2e (tol %.0e)\n", worst, kDotTol);
      return std::string();
    });
  }
}

}  // namespace

int main() {
  test_gemm_nn_bf16();
  return finish();
}
