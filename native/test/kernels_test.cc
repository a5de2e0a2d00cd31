// Kernel sets, dispatch, ThreadPool and the threaded matmul drivers, against float64 references.
// Prints one line per test and a closing "N passed, M failed"; exits non-zero on any failure.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_pool.h"
#include "cpu/attention.h"
#include "cpu/kernels.h"
#include "cpu/log_sum_exp.h"
#include "cpu/ops.h"
#include "test/test_harness.h"

using namespace scriptorium;

namespace {

using scriptorium_test::fmt;
using scriptorium_test::has_bf16_dot_products;
using scriptorium_test::randoms;
using scriptorium_test::uniform;

// Tolerances. Dot products: |y - ref| <= tol * sum_k |x_k w_k|.
constexpr double kDotTolF32 = 2e-6;     // scalar, avx2, avx512 (F32 FMA on exact bf16 weights)
constexpr double kDotTolSplit = 2e-5;   // avx512bf16 (x split into two bf16 terms, ~16 bits)
constexpr double kElemTol = 4e-6;       // rmsnorm / swiglu / softmax, relative to |ref|
constexpr double kAttnTol = 2e-5;       // attention, relative to sum_r p_r |V_r| (+ score size)

const float kInf = std::numeric_limits<float>::infinity();

int g_passed = 0;
int g_failed = 0;

// Runs one test: fn returns "" on success or a failure description; note is printed on success.
void run(const std::string& name, const std::function<std::string(std::string&)>& fn) {
  std::string note;
  const std::string err = fn(note);
  if (err.empty()) {
    ++g_passed;
    std::printf("ok    %s%s%s\n", name.c_str(), note.empty() ? "" : "  ", note.c_str());
  } else {
    ++g_failed;
    std::printf("FAIL  %s: %s\n", name.c_str(), err.c_str());
  }
  std::fflush(stdout);
}

// ---------------------------------------------------------------- gemm

const int64_t kMs[] = {1, 2, 3, 5, 8, 16, 17, 33};
const int64_t kNs[] = {1, 7, 16, 31, 64, 257};
const int64_t kKs[] = {1, 3, 15, 16, 17, 31, 64, 100, 255, 1280};
// Beyond the grid: enough rows x K that every set splits X into several cache blocks.
const int64_t kBigShapes[][3] = {{100, 33, 4100}, {90, 20, 1500}};

struct GemmCase {
  int64_t M, N, K, ldx, ldw;
  std::vector<float> X, Wf;    // X[M, ldx]; Wf[N, ldw] f32 weights (bf16-representable)
  std::vector<bf16_t> Wb;      // Wb[N, K]
  std::vector<float> Bt;       // Bt[K, N + 2]: Wf transposed (the right operand of gemm_nn_f32)
  std::vector<double> ref, mag;  // ref[M, N] and sum |x w| (identical for Wf and Wb)
  std::vector<double> ref_rounded;  // ref with each x rounded once to BF16: fast precision's product
};

// X spans magnitudes 2^-8..2^8 so the bf16 split is exercised across exponents.
GemmCase make_case(int64_t M, int64_t N, int64_t K) {
  GemmCase c{M, N, K, K + 3, K + 1, {}, {}, {}, {}, {}, {}, {}};
  c.X.resize(M * c.ldx);
  for (float& x : c.X) x = std::ldexp(uniform(-1, 1), static_cast<int>(uniform(-8, 8)));
  c.Wb.resize(N * K);
  c.Wf.assign(N * c.ldw, 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      c.Wb[n * K + k] = f32_to_bf16(uniform(-1, 1));
      c.Wf[n * c.ldw + k] = bf16_to_f32(c.Wb[n * K + k]);
    }
  c.Bt.assign(K * (N + 2), 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) c.Bt[k * (N + 2) + n] = c.Wf[n * c.ldw + k];
  c.ref.resize(M * N);
  c.mag.resize(M * N);
  c.ref_rounded.resize(M * N);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0, a = 0, r = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = double(c.X[m * c.ldx + k]) * c.Wf[n * c.ldw + k];
        s += p;
        a += std::fabs(p);
        r += double(bf16_to_f32(f32_to_bf16(c.X[m * c.ldx + k]))) * c.Wf[n * c.ldw + k];
      }
      c.ref[m * N + n] = s;
      c.mag[m * N + n] = a;
      c.ref_rounded[m * N + n] = r;
    }
  return c;
}

const std::vector<GemmCase>& gemm_cases() {
  static const std::vector<GemmCase> cases = [] {
    std::vector<GemmCase> v;
    for (int64_t M : kMs)
      for (int64_t N : kNs)
        for (int64_t K : kKs) v.push_back(make_case(M, N, K));
    for (const auto& mnk : kBigShapes) v.push_back(make_case(mnk[0], mnk[1], mnk[2]));
    return v;
  }();
  return cases;
}

// Runs gemm over [0, s) and [s, N) into Y with row stride N + 5; checks values and the padding.
template <typename Call>
std::string check_gemm(const char* what, double tol, std::string& note, Call call) {
  double worst = 0;
  for (const GemmCase& c : gemm_cases()) {
    const int64_t ldy = c.N + 5;
    std::vector<float> Y(c.M * ldy, -7.0f);
    const int64_t s = c.N / 3;
    call(c, Y.data(), ldy, 0, s);
    call(c, Y.data(), ldy, s, c.N);
    for (int64_t m = 0; m < c.M; ++m) {
      for (int64_t n = c.N; n < ldy; ++n)
        if (Y[m * ldy + n] != -7.0f)
          return std::string(what) + fmt(" wrote padding at M=%g N=%g K=%g", c.M, c.N, c.K);
      for (int64_t n = 0; n < c.N; ++n) {
        const int64_t i = m * c.N + n;
        const double err = std::fabs(Y[m * ldy + n] - c.ref[i]) / (c.mag[i] + 1e-300);
        worst = std::max(worst, err);
        if (!(err <= tol))
          return fmt("M=%g N=%g K=%g m=%g: rel err %.3g", c.M, c.N, c.K, m, err) + " in " + what;
      }
    }
  }
  note = std::to_string(gemm_cases().size()) +
         fmt(" shapes, max rel err %.2e (tol %.0e)", worst, tol);
  return "";
}

void test_gemm(const KernelSet& ks) {
  const double tol = std::strcmp(ks.name, "avx512bf16") == 0 ? kDotTolSplit : kDotTolF32;
  run(std::string(ks.name) + "/gemm_bf16", [&](std::string& note) {
    return check_gemm("gemm_bf16", tol, note,
                      [&](const GemmCase& c, float* Y, int64_t ldy, int64_t n0, int64_t n1) {
                        ks.gemm_bf16(c.X.data(), c.ldx, c.Wb.data(), Y, ldy, c.M, n0, n1, c.K);
                      });
  });
  run(std::string(ks.name) + "/gemm_f32", [&](std::string& note) {
    return check_gemm("gemm_f32", kDotTolF32, note,
                      [&](const GemmCase& c, float* Y, int64_t ldy, int64_t n0, int64_t n1) {
                        const float* W = c.Wf.data();
                        ks.gemm_f32(c.X.data(), c.ldx, W, c.ldw, Y, ldy, c.M, n0, n1, c.K);
                      });
  });
}

// gemm_bf16_fast on the sets with BF16 dot products must equal the product of BF16-rounded activations
// (one rounding, so within the split tolerance of that reference and about 2^-9 away from the
// unrounded one); the other sets have no cheaper product and must use their gemm_bf16. Batched rows equal one-row calls.
void test_gemm_fast(const KernelSet& ks) {
  run(std::string(ks.name) + "/gemm_bf16_fast", [&](std::string& note) -> std::string {
    if (!has_bf16_dot_products(ks.name)) {
      if (ks.gemm_bf16_fast != ks.gemm_bf16) return std::string("gemm_bf16_fast must be gemm_bf16 on this set");
      note = "is gemm_bf16 (convert-and-FMA)";
      return "";
    }
    double worst = 0;
    for (const GemmCase& c : gemm_cases()) {
      std::vector<float> Y(c.M * c.N), one(c.N);
      ks.gemm_bf16_fast(c.X.data(), c.ldx, c.Wb.data(), Y.data(), c.N, c.M, 0, c.N / 3, c.K);
      ks.gemm_bf16_fast(c.X.data(), c.ldx, c.Wb.data(), Y.data(), c.N, c.M, c.N / 3, c.N, c.K);
      for (int64_t m = 0; m < c.M; ++m) {
        ks.gemm_bf16_fast(c.X.data() + m * c.ldx, c.ldx, c.Wb.data(), one.data(), c.N, 1, 0, c.N, c.K);
        if (!std::equal(one.begin(), one.end(), Y.begin() + m * c.N))
          return fmt("M=%g N=%g K=%g: row %g differs from a one-row call", c.M, c.N, c.K, m);
        for (int64_t n = 0; n < c.N; ++n) {
          const double err = std::fabs(Y[m * c.N + n] - c.ref_rounded[m * c.N + n]) / (c.mag[m * c.N + n] + 1e-300);
          worst = std::max(worst, err);
          if (!(err <= kDotTolSplit))
            return fmt("M=%g N=%g K=%g m=%g: rel err %.3g against the BF16-rounded product", c.M, c.N, c.K, m, err);
        }
      }
    }
    note = std::to_string(gemm_cases().size()) +
           fmt(" shapes, max rel err %.2e against BF16-rounded activations (tol %.0e), row invariant", worst, kDotTolSplit);
    return "";
  });
}

// The packed products (the sets with BF16 dot products only): exact against the float64 product, fast against the
// product of BF16-rounded activations, both within the split tolerance; columns computed in two
// calls split at a panel boundary (nothing written beyond n1, nor into Y's padding); each row of a
// batched call bitwise equal to a one-row call.
void test_gemm_packed(const KernelSet& ks) {
  const bool has = has_bf16_dot_products(ks.name);
  run(std::string(ks.name) + "/gemm_bf16_packed", [&](std::string& note) -> std::string {
    if (!has) {
      if (ks.gemm_bf16_packed || ks.gemm_bf16_packed_fast) return std::string("this set must have no packed products");
      note = "none (weights read as stored)";
      return "";
    }
    double worst[2] = {0, 0};
    for (const GemmCase& c : gemm_cases()) {
      const PackedBf16 P(c.Wb.data(), c.N, c.K);
      for (int fast = 0; fast < 2; ++fast) {
        const auto gemm = fast ? ks.gemm_bf16_packed_fast : ks.gemm_bf16_packed;
        const int64_t ldy = c.N + 5, split = c.N / 2 / kPanelColumns * kPanelColumns;
        std::vector<float> Y(c.M * ldy, -7.0f), one(c.N);
        gemm(c.X.data(), c.ldx, P.data(), Y.data(), ldy, c.M, 0, split, c.K);
        gemm(c.X.data(), c.ldx, P.data(), Y.data(), ldy, c.M, split, c.N, c.K);
        for (int64_t m = 0; m < c.M; ++m) {
          for (int64_t n = c.N; n < ldy; ++n)
            if (Y[m * ldy + n] != -7.0f) return fmt("M=%g N=%g K=%g: wrote Y's padding", c.M, c.N, c.K);
          gemm(c.X.data() + m * c.ldx, c.ldx, P.data(), one.data(), c.N, 1, 0, c.N, c.K);
          if (!std::equal(one.begin(), one.end(), Y.begin() + m * ldy))
            return fmt("M=%g N=%g K=%g fast=%g: row %g differs from a one-row call", c.M, c.N, c.K, fast, m);
          for (int64_t n = 0; n < c.N; ++n) {
            const double want = (fast ? c.ref_rounded : c.ref)[m * c.N + n];
            const double err = std::fabs(Y[m * ldy + n] - want) / (c.mag[m * c.N + n] + 1e-300);
            worst[fast] = std::max(worst[fast], err);
            if (!(err <= kDotTolSplit))
              return fmt("M=%g N=%g K=%g m=%g: rel err %.3g", c.M, c.N, c.K, m, err) + (fast ? " (fast)" : " (exact)");
          }
        }
      }
    }
    note = std::to_string(gemm_cases().size()) +
           fmt(" shapes, max rel err exact %.2e, fast %.2e (against BF16-rounded activations), tol %.0e, row invariant",
               worst[0], worst[1], kDotTolSplit);
    return "";
  });
}

void test_gemm_nn(const KernelSet& ks) {
  run(std::string(ks.name) + "/gemm_nn_f32", [&](std::string& note) {
    return check_gemm("gemm_nn_f32", kDotTolF32, note,
                      [&](const GemmCase& c, float* Y, int64_t ldy, int64_t n0, int64_t n1) {
                        ks.gemm_nn_f32(c.X.data(), c.ldx, c.Bt.data(), c.N + 2, Y, ldy, c.M, n0, n1, c.K);
                      });
  });
}

// Row m of a batched call must be bitwise equal to a one-row call: decode and prefill agree.
void test_row_invariance(const KernelSet& ks) {
  run(std::string(ks.name) + "/gemm_row_invariance", [&](std::string& note) -> std::string {
    for (const auto& mnk : kBigShapes) {
      const auto& cases = gemm_cases();
      const GemmCase& c = *std::find_if(cases.begin(), cases.end(), [&](const GemmCase& g) {
        return g.M == mnk[0] && g.N == mnk[1] && g.K == mnk[2];
      });
      std::vector<float> all(c.M * c.N), one(c.N), all_f(c.M * c.N), one_f(c.N), all_nn(c.M * c.N), one_nn(c.N);
      ks.gemm_bf16(c.X.data(), c.ldx, c.Wb.data(), all.data(), c.N, c.M, 0, c.N, c.K);
      ks.gemm_f32(c.X.data(), c.ldx, c.Wf.data(), c.ldw, all_f.data(), c.N, c.M, 0, c.N, c.K);
      ks.gemm_nn_f32(c.X.data(), c.ldx, c.Bt.data(), c.N + 2, all_nn.data(), c.N, c.M, 0, c.N, c.K);
      for (int64_t m = 0; m < c.M; ++m) {
        const float* x = c.X.data() + m * c.ldx;
        ks.gemm_bf16(x, c.ldx, c.Wb.data(), one.data(), c.N, 1, 0, c.N, c.K);
        ks.gemm_f32(x, c.ldx, c.Wf.data(), c.ldw, one_f.data(), c.N, 1, 0, c.N, c.K);
        ks.gemm_nn_f32(x, c.ldx, c.Bt.data(), c.N + 2, one_nn.data(), c.N, 1, 0, c.N, c.K);
        if (!std::equal(one.begin(), one.end(), all.begin() + m * c.N) ||
            !std::equal(one_f.begin(), one_f.end(), all_f.begin() + m * c.N) ||
            !std::equal(one_nn.begin(), one_nn.end(), all_nn.begin() + m * c.N))
          return fmt("M=%g K=%g: row %g differs from a one-row call", c.M, c.K, m);
      }
    }
    note = "gemm_bf16, gemm_f32 and gemm_nn_f32, bitwise";
    return "";
  });
}

// ---------------------------------------------------------------- elementwise kernels

const int64_t kLens[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 1280, 1281};

// max over i of |got - ref| / (|ref| + abs_floor); "" when within tol.
std::string check_elems(const std::vector<float>& got, const std::vector<double>& ref, double tol,
                        double abs_floor, double& worst) {
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(got[i] - ref[i]) / (std::fabs(ref[i]) + abs_floor);
    worst = std::max(worst, err);
    if (!(err <= tol))
      return fmt("n=%g i=%g got %.9g want %.9g", double(ref.size()), double(i), got[i], ref[i]);
  }
  return "";
}

void test_rmsnorm(const KernelSet& ks) {
  run(std::string(ks.name) + "/rmsnorm", [&](std::string& note) -> std::string {
    double worst = 0;
    for (int64_t n : kLens) {
      const std::vector<float> x = randoms(n, -3, 3);
      std::vector<bf16_t> w(n);
      for (auto& v : w) v = f32_to_bf16(uniform(0.5f, 1.5f));
      double ss = 0;
      for (float v : x) ss += double(v) * v;
      const double r = 1.0 / std::sqrt(ss / n + 1e-6);
      std::vector<double> ref(n);
      for (int64_t i = 0; i < n; ++i) ref[i] = x[i] * r * bf16_to_f32(w[i]);
      std::vector<float> y(n), alias = x;
      ks.rmsnorm(x.data(), w.data(), y.data(), n, 1e-6f);
      ks.rmsnorm(alias.data(), w.data(), alias.data(), n, 1e-6f);
      std::string e = check_elems(y, ref, kElemTol, 1e-30, worst);
      if (e.empty() && alias != y) e = fmt("in-place result differs, n=%g", n);
      if (!e.empty()) return e;
    }
    note = fmt("max rel err %.2e", worst);
    return "";
  });
}

void test_swiglu(const KernelSet& ks) {
  run(std::string(ks.name) + "/swiglu", [&](std::string& note) -> std::string {
    double worst = 0;
    for (int64_t n : kLens) {
      std::vector<float> g = randoms(n, -20, 20);
      const float extremes[] = {-1000.f, -100.f, -88.f, 0.f, 88.f, 100.f, 1000.f};
      for (size_t i = 0; i < sizeof extremes / sizeof *extremes && i < size_t(n); ++i)
        g[i * 7 % n] = extremes[i];
      const std::vector<float> u = randoms(n, -2, 2);
      std::vector<double> ref(n);
      for (int64_t i = 0; i < n; ++i) ref[i] = g[i] / (1.0 + std::exp(-double(g[i]))) * u[i];
      std::vector<float> out(n), alias = g;
      ks.swiglu(g.data(), u.data(), out.data(), n);
      ks.swiglu(alias.data(), u.data(), alias.data(), n);
      std::string e = check_elems(out, ref, kElemTol, 1e-30, worst);
      if (e.empty() && alias != out) e = fmt("in-place result differs, n=%g", n);
      if (!e.empty()) return e;
    }
    note = fmt("max rel err %.2e", worst);
    return "";
  });
}

void test_gelu_erf(const KernelSet& ks) {
  run(std::string(ks.name) + "/gelu_erf", [&](std::string& note) -> std::string {
    double worst = 0;
    for (int64_t n : kLens) {
      std::vector<float> x = randoms(n, -8, 8);
      const float extremes[] = {-1000.f, -30.f, -6.f, -0.f, 0.f, 1e-20f, 6.f, 30.f, 1000.f};
      for (size_t i = 0; i < sizeof extremes / sizeof *extremes && i < size_t(n); ++i) x[i * 5 % n] = extremes[i];
      std::vector<double> ref(n);
      for (int64_t i = 0; i < n; ++i) ref[i] = 0.5 * x[i] * (1.0 + std::erf(double(x[i]) / std::sqrt(2.0)));
      ks.gelu_erf(x.data(), n);
      // Absolute below 1, relative above: 1 + erf is exact to about 2e-7.
      if (std::string e = check_elems(x, ref, 1e-6, 1.0, worst); !e.empty()) return e;
    }
    note = fmt("max err %.2e (abs below 1, rel above)", worst);
    return "";
  });
}

std::vector<double> softmax_ref(const std::vector<float>& x) {
  double mx = -kInf, sum = 0;
  for (float v : x) mx = std::max<double>(mx, v);
  std::vector<double> p(x.size());
  for (size_t i = 0; i < x.size(); ++i) sum += p[i] = std::exp(x[i] - mx);
  for (double& v : p) v /= sum;
  return p;
}

void test_softmax(const KernelSet& ks) {
  run(std::string(ks.name) + "/softmax", [&](std::string& note) -> std::string {
    double worst = 0;
    for (int64_t n : kLens) {
      for (int with_ninf = 0; with_ninf < 2; ++with_ninf) {
        std::vector<float> x = randoms(n, -30, 30);
        if (with_ninf)
          for (int64_t i = 1; i < n; i += 3) x[i] = -kInf;
        const std::vector<double> ref = softmax_ref(x);
        ks.softmax(x.data(), n);
        const std::string e = check_elems(x, ref, kElemTol, 1e-30 + 1e-7 / n, worst);
        if (!e.empty()) return e;
      }
      std::vector<float> x(n, -kInf);
      ks.softmax(x.data(), n);
      for (float v : x)
        if (v != 1.0f / n) return fmt("all -inf: got %g, want uniform 1/%g", v, n);
      x.assign(n, 1.0f);
      x[n / 2] = kInf;
      if (n > 2) x[n - 1] = kInf;
      ks.softmax(x.data(), n);
      const float share = n > 2 ? 0.5f : 1.0f;
      for (int64_t i = 0; i < n; ++i) {
        const float want = (i == n / 2 || (n > 2 && i == n - 1)) ? share : 0.0f;
        if (x[i] != want) return fmt("+inf entries: n=%g i=%g got %g want %g", n, i, x[i], want);
      }
    }
    note = fmt("max rel err %.2e; -inf, all -inf, +inf cases", worst);
    return "";
  });
}

void test_axpy(const KernelSet& ks) {
  run(std::string(ks.name) + "/axpy", [&](std::string& note) -> std::string {
    for (int64_t n : kLens) {
      std::vector<float> y = randoms(n + 1, -1, 1);
      const std::vector<float> x = randoms(n, -1, 1), y0 = y;
      ks.axpy(y.data(), 0.37f, x.data(), n);
      if (y[n] != y0[n]) return fmt("wrote past n=%g", n);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = y0[i] + 0.37 * x[i];
        if (std::fabs(y[i] - ref) > 1.2e-7 * (std::fabs(y0[i]) + std::fabs(0.37 * x[i])))
          return fmt("n=%g i=%g got %.9g want %.9g", n, i, y[i], ref);
      }
    }
    note = "within 1 ulp of |y| + |a x|";
    return "";
  });
}

void test_argmax(const KernelSet& ks) {
  run(std::string(ks.name) + "/argmax", [&](std::string&) -> std::string {
    for (int64_t n : kLens) {
      for (int trial = 0; trial < 6; ++trial) {
        std::vector<float> x = randoms(n, -5, 5);
        if (trial == 1)
          for (int64_t i = 0; i < n; i += 2) x[i] = -kInf;
        if (trial == 2) x.assign(n, -kInf);
        if (trial == 3) x.assign(n, 2.5f);
        if (trial == 4) x[n - 1] = 9.0f;
        if (trial == 5) {  // ties: the maximum repeated, first copy past the first vector
          for (int64_t i = n / 2; i < n; i += 5) x[i] = 7.0f;
        }
        const int64_t want = std::max_element(x.begin(), x.end()) - x.begin();
        const int64_t got = ks.argmax(x.data(), n);
        if (got != want) return fmt("n=%g trial=%g got %g want %g", n, trial, got, want);
      }
    }
    return "";
  });
}

void test_sum_exp(const KernelSet& ks) {
  run(std::string(ks.name) + "/sum_exp", [&](std::string& note) -> std::string {
    double worst = 0;
    for (int64_t n : kLens) {
      for (int trial = 0; trial < 4; ++trial) {
        std::vector<float> x = randoms(n, -30, 30);  // terms from 1 down to e^-60, below F32's range
        if (trial == 1)  // -inf entries beside finite ones (the maximum is finite)
          for (int64_t i = 1; i < n; i += 2) x[i] = -kInf;
        if (trial == 2) x.assign(n, 2.5f);
        if (trial == 3) x[n / 2] = 1e4f;  // one term dominates
        const float mx = *std::max_element(x.begin(), x.end());
        double want = 0;
        for (float v : x) want += std::exp(static_cast<double>(v) - mx);
        const double got = ks.sum_exp(x.data(), n, mx);
        // A sum of n positive terms, each exp within a few ulp: (n + 4) units of F32 rounding.
        const double err = std::fabs(got - want) / want;
        worst = std::max(worst, err / ((n + 4) * 0x1p-24));
        if (!(err <= (n + 4) * 0x1p-24)) return fmt("n=%g trial=%g got %.9g want %.9g", n, trial, got, want);
      }
    }
    note = fmt("worst %.2g of (n + 4) F32 roundings", worst);
    return "";
  });
}

// The vocabulary head's log-sum-exp: chunks of 1024 folded in order against float64 over the whole
// row, with maxima that grow, shrink, a chunk of -inf and a short last chunk.
void test_log_sum_exp(const KernelSet& ks) {
  run(std::string(ks.name) + "/log-sum-exp over chunks", [&](std::string& note) -> std::string {
    constexpr int64_t kChunk = 1024, n = 5 * kChunk + 300;
    std::vector<float> x = randoms(n, -8, 8);
    for (int64_t i = kChunk; i < 2 * kChunk; ++i) x[i] += 20.f;  // the maximum grows at chunk 1
    for (int64_t i = 3 * kChunk; i < 4 * kChunk; ++i) x[i] = -kInf;
    x[4 * kChunk + 7] = 40.f;  // and again at chunk 4
    double mx = -INFINITY, sum = 0;
    for (float v : x) mx = std::max(mx, static_cast<double>(v));
    for (float v : x) sum += std::exp(v - mx);
    const double want = mx + std::log(sum);
    LogSumExp lse;
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
      const int64_t width = std::min(kChunk, n - c0);
      const float chunk_max = x[c0 + ks.argmax(x.data() + c0, width)];
      lse.fold(chunk_max, chunk_max == -kInf ? 0.f : ks.sum_exp(x.data() + c0, width, chunk_max));
    }
    const double err = std::fabs(lse.value() - want);
    note = fmt("error %.2g", err);
    if (!(err <= 1e-5)) return fmt("got %.12g want %.12g", lse.value(), want);
    LogSumExp empty;
    empty.fold(-INFINITY, 0);
    if (empty.value() != -INFINITY) return "nothing folded must give -inf";
    return "";
  });
}

// ---------------------------------------------------------------- attention

// The IEEE half nearest to x, decoded by hand (independent of the kernels' conversions).
double half_value(f16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24)
                           : exponent == 31 ? (mantissa ? std::nan("") : kInf)
                                            : std::ldexp(1024 + mantissa, exponent - 25);
  return sign ? -magnitude : magnitude;
}

// One head's attention over keys [0, n) through a set's fold (attention_head or _f16): in one call,
// in `pieces` calls continuing one state, or (merged) one state per piece joined by
// merge_attention_states.
template <typename T, typename Fold>
std::vector<float> attend_in_pieces(Fold fold, const float* q, const T* K, const T* V, int64_t ld, int64_t n, int64_t d,
                                    float scale, int64_t pieces, bool merged) {
  std::vector<AttentionState> states(merged ? pieces : 1);
  std::vector<float> accs(states.size() * d, 0.0f), out(d, 123.0f);
  for (int64_t i = 0; i < pieces; ++i) {
    const int64_t a = n * i / pieces, b = n * (i + 1) / pieces, slot = merged ? i : 0;
    fold(q, K + a * ld, V + a * ld, ld, b - a, d, scale, accs.data() + slot * d, &states[slot]);
  }
  merge_attention_states(states.data(), 1, accs.data(), d, static_cast<int64_t>(states.size()), d, out.data());
  return out;
}

// Against float64 softmax(q.K^T * scale) V in one call, in three continued pieces and in three
// merged ones. With `half`, keys and values go through to_f16 first (the 16-bit KV cache) and
// attention_head_f16 must equal attention_head on the widened rows bitwise. masked_every > 0 gives
// every masked_every-th key a -inf score (an F32 -inf in its first element, q[0] > 0): those keys
// must get no weight, and with masked_every == 1 the output is zeros.
std::string check_attention(const KernelSet& ks, int64_t n, int64_t d, float key_scale, double& worst,
                            bool half = false, int64_t masked_every = 0) {
  const int64_t ld = d + 3;
  std::vector<float> q = randoms(d, -1, 1);
  std::vector<float> K = randoms(n * ld, -1, 1), V = randoms(n * ld, -1, 1);
  for (float& k : K) k *= key_scale;
  if (masked_every > 0) {
    q[0] = 0.5f;
    for (int64_t r = 0; r < n; r += masked_every) K[r * ld] = -kInf;
  }
  std::vector<f16_t> K16(K.size()), V16(V.size());
  if (half) {
    ks.to_f16(K.data(), K16.data(), static_cast<int64_t>(K.size()));
    ks.to_f16(V.data(), V16.data(), static_cast<int64_t>(V.size()));
    for (size_t i = 0; i < K.size(); ++i) K[i] = static_cast<float>(half_value(K16[i]));
    for (size_t i = 0; i < V.size(); ++i) V[i] = static_cast<float>(half_value(V16[i]));
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<double> s(n);
  double mx = -kInf, smax = 0;
  for (int64_t r = 0; r < n; ++r) {
    double dot = 0;
    for (int64_t i = 0; i < d; ++i) dot += double(q[i]) * K[r * ld + i];
    s[r] = scale * dot;
    mx = std::max(mx, s[r]);
    if (std::isfinite(s[r])) smax = std::max(smax, std::fabs(s[r]));
  }
  double sum = 0;
  for (double& v : s) sum += v = mx == -kInf ? 0.0 : std::exp(v - mx);
  for (const auto& [pieces, merged] : {std::pair<int64_t, bool>{1, false}, {3, false}, {3, true}}) {
    const std::vector<float> out =
        attend_in_pieces(ks.attention_head, q.data(), K.data(), V.data(), ld, n, d, scale, pieces, merged);
    const char* how = pieces == 1 ? "one call" : merged ? "3 merged states" : "3 continued calls";
    if (half) {
      const std::vector<float> out16 =
          attend_in_pieces(ks.attention_head_f16, q.data(), K16.data(), V16.data(), ld, n, d, scale, pieces, merged);
      if (std::memcmp(out.data(), out16.data(), d * sizeof(float)) != 0)
        return fmt("n=%g d=%g: attention_head_f16 differs from attention_head on the widened rows (", n, d) + how + ")";
    }
    // A score computed in F32 is off by ~eps * |score|, which moves the weights by that much.
    const double tol = kAttnTol + 1e-6 * smax;
    for (int64_t i = 0; i < d; ++i) {
      double ref = 0, mag = 0;
      for (int64_t r = 0; r < n; ++r) {
        if (s[r] == 0.0) continue;  // a masked key (exp gave 0)
        ref += s[r] / sum * V[r * ld + i];
        mag += s[r] / sum * std::fabs(V[r * ld + i]);
      }
      if (sum == 0) {
        if (out[i] != 0.0f) return fmt("n=%g d=%g: every key masked but out[%g] = %g, ", n, d, i, out[i]) + how;
        continue;
      }
      const double err = std::fabs(out[i] - ref) / (mag + 1e-30);
      worst = std::max(worst, err / tol * kAttnTol);
      if (!(err <= tol))
        return fmt("n=%g d=%g key_scale=%g masked_every=%g: ", n, d, key_scale, masked_every) +
               fmt("i=%g rel err %.3g, ", i, err) + how;
    }
  }
  return "";
}

void test_attention_f16(const KernelSet& ks) {
  run(std::string(ks.name) + "/attention_head_f16", [&](std::string& note) -> std::string {
    double worst = 0;
    for (int64_t d : {1, 7, 16, 64, 80, 128})
      for (int64_t n : {1, 2, 15, 17, 63, 65, 200})
        for (float key_scale : {1.0f, 300.0f}) {
          const std::string e = check_attention(ks, n, d, key_scale, worst, true);
          if (!e.empty()) return e;
        }
    note = fmt("bitwise attention_head on the widened rows; max rel err %.2e vs float64", worst);
    return "";
  });
}

// to_f16 against the exact nearest half: no neighbouring half is closer, ties go to the even
// pattern, beyond +-65504 saturates, NaN stays NaN; odd lengths exercise every tail.
void test_to_f16(const KernelSet& ks) {
  run(std::string(ks.name) + "/to_f16", [&](std::string& note) -> std::string {
    std::vector<float> x = randoms(1000, -70000, 70000);
    const std::vector<float> small = randoms(1000, -1e-4f, 1e-4f);
    x.insert(x.end(), small.begin(), small.end());
    for (f16_t h = 0; h < 0x7c00; h += 7) {  // exact halves and the midpoints beside them
      const double v = half_value(h), next = half_value(static_cast<f16_t>(h + 1));
      x.push_back(static_cast<float>(v));
      x.push_back(static_cast<float>((v + next) / 2));
      x.push_back(-static_cast<float>((v + next) / 2));
    }
    x.push_back(65504.0f), x.push_back(65519.0f), x.push_back(1e30f), x.push_back(-kInf), x.push_back(std::nanf(""));
    for (int64_t n : {static_cast<int64_t>(x.size()), int64_t{1}, int64_t{15}, int64_t{17}}) {
      std::vector<f16_t> y(n + 1, 0xabcd);
      ks.to_f16(x.data(), y.data(), n);
      if (y[n] != 0xabcd) return fmt("n=%g: wrote past the end", n);
      for (int64_t i = 0; i < n; ++i) {
        const double want = x[i], got = half_value(y[i]);
        if (std::isnan(want)) {
          if (!std::isnan(got)) return fmt("NaN became %g", got);
          continue;
        }
        if (std::fabs(want) >= 65504) {
          if (got != std::copysign(65504.0, want)) return fmt("%g saturated to %g", want, got);
          continue;
        }
        const f16_t mag = y[i] & 0x7fff;
        for (f16_t other : {static_cast<f16_t>(mag - 1), static_cast<f16_t>(mag + 1)}) {
          if (mag == 0 && other > mag + 1) continue;
          const double alt = std::copysign(half_value(other), want);
          const double e = std::fabs(got - want), ea = std::fabs(alt - want);
          if (ea < e || (ea == e && (mag & 1)))
            return fmt("%.9g gave %.9g but %.9g is nearer or the even tie", want, got, alt);
        }
      }
    }
    note = fmt("%g values, nearest even, saturating", static_cast<double>(x.size()));
    return "";
  });
}

// from_f16 against the hand decoder over every half bit pattern (NaNs stay NaN).
void test_from_f16(const KernelSet& ks) {
  run(std::string(ks.name) + "/from_f16", [&](std::string& note) -> std::string {
    std::vector<f16_t> x(65536 + 1);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<f16_t>(i);
    for (int64_t n : {static_cast<int64_t>(x.size()), int64_t{1}, int64_t{15}, int64_t{17}}) {
      std::vector<float> y(n + 1, 7.0f);
      ks.from_f16(x.data(), y.data(), n);
      if (y[n] != 7.0f) return fmt("n=%g: wrote past the end", n);
      for (int64_t i = 0; i < n; ++i) {
        const double want = half_value(x[i]);
        if (std::isnan(want) ? !std::isnan(y[i]) : (y[i] != want || std::signbit(y[i]) != std::signbit(want)))
          return fmt("pattern %g gave %.9g, want %.9g", x[i], y[i], want);
      }
    }
    note = "every half pattern exact";
    return "";
  });
}

void test_attention(const KernelSet& ks) {
  run(std::string(ks.name) + "/attention_head", [&](std::string& note) -> std::string {
    double worst = 0;
    for (int64_t d : {1, 7, 16, 64, 80, 128, 131})
      for (int64_t n : {1, 2, 7, 15, 16, 17, 63, 64, 65, 200, 3000})
        for (float key_scale : {1.0f, 300.0f}) {
          const std::string e = check_attention(ks, n, d, key_scale, worst);
          if (!e.empty()) return e;
        }
    for (int64_t masked_every : {3, 1})
      for (int64_t n : {1, 17, 100}) {
        const std::string e = check_attention(ks, n, 37, 1.0f, worst, false, masked_every);
        if (!e.empty()) return e;
      }
    // n == 0 leaves a state as it is.
    std::vector<float> acc(8, 5.0f);
    AttentionState state{1.5f, 2.5f};
    const float q[8] = {};
    ks.attention_head(q, q, q, 8, 0, 8, 1.0f, acc.data(), &state);
    for (float v : acc)
      if (v != 5.0f) return std::string("n=0 changed the accumulator");
    if (state.max != 1.5f || state.sum != 2.5f) return std::string("n=0 changed the state");
    note = fmt("max rel err %.2e (normalised to the plain tolerance); -inf keys get no weight; n=0 keeps the state", worst);
    return "";
  });
}

// ---------------------------------------------------------------- shared / threaded

void test_rope() {
  run("rope_rotate_half", [](std::string& note) -> std::string {
    double worst = 0;
    for (int64_t d : {2, 6, 64, 128})
      for (int64_t pos : {0, 1, 17, 1000, 4095})
        for (float theta : {10000.0f, 1000000.0f}) {
          const int64_t heads = 3;
          const std::vector<float> x0 = randoms(heads * d, -2, 2);
          std::vector<float> x = x0;
          rope_rotate_half(x.data(), heads, d, pos, theta);
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t i = 0; i < d / 2; ++i) {
              const double angle = pos * std::pow(double(theta), -2.0 * i / d);
              const double a = x0[h * d + i], b = x0[h * d + i + d / 2];
              const double want[2] = {a * std::cos(angle) - b * std::sin(angle),
                                      b * std::cos(angle) + a * std::sin(angle)};
              const float got[2] = {x[h * d + i], x[h * d + i + d / 2]};
              // F32 angle (powf, product) and F32 cos/sin: ~2.4e-7 relative in the angle.
              const double tol = (std::fabs(a) + std::fabs(b)) * (3e-7 + 3e-7 * angle);
              for (int j = 0; j < 2; ++j) {
                const double err = std::fabs(got[j] - want[j]);
                worst = std::max(worst, err / (std::fabs(a) + std::fabs(b)));
                if (!(err <= tol))
                  return fmt("d=%g pos=%g theta=%g i=%g err %.3g", d, pos, theta, i, err);
              }
            }
        }
    note = fmt("max abs err / (|a|+|b|) %.2e", worst);
    return "";
  });
}

void test_thread_pool() {
  run("thread_pool/coverage", [](std::string& note) -> std::string {
    int combos = 0;
    for (int threads : {1, 2, 3, 4}) {
      ThreadPool pool(threads);
      for (int64_t n : {0, 1, 2, 5, 15, 16, 17, 100, 1000, 12345})
        for (int64_t grain : {1, 3, 16, 64, 1000, 100000}) {
          std::vector<std::atomic<int>> hits(n);
          std::atomic<bool> bad_chunk{false};
          pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
            if (b >= e || b % grain != 0 || (e != n && (e - b) % grain != 0)) bad_chunk = true;
            for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
          });
          if (bad_chunk)
            return fmt("threads=%g n=%g grain=%g: bad chunk bounds", threads, n, grain);
          for (int64_t i = 0; i < n; ++i)
            if (hits[i] != 1)
              return fmt("threads=%g n=%g grain=%g: index %g hit %g times", threads, n, grain, i,
                         hits[i]);
          ++combos;
        }
    }
    note = std::to_string(combos) + " (threads, n, grain) combinations";
    return "";
  });
  run("thread_pool/back_to_back_and_wakeup", [](std::string& note) -> std::string {
    ThreadPool pool(3);
    std::atomic<int64_t> total{0};
    for (int round = 0; round < 3000; ++round)
      pool.parallel_for(64, 1, [&](int64_t b, int64_t e) { total += e - b; });
    for (int round = 0; round < 5; ++round) {  // let the workers fall asleep, then wake them
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      pool.parallel_for(64, 1, [&](int64_t b, int64_t e) { total += e - b; });
    }
    if (total != 64 * 3005) return fmt("covered %g indices, want %g", double(total), 64.0 * 3005);
    note = "3000 back-to-back dispatches + 5 after sleeping";
    return "";
  });
}

void test_matmul() {
  const std::string name = std::string("matmul/") + active_kernels().name + "_threads_1_2_3";
  run(name, [](std::string& note) -> std::string {
    const KernelSet& ks = active_kernels();
    ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
    int shapes = 0;
    // M from 193 up: matmul_bf16 splits rows (an uneven last chunk at 193 and 301) instead of columns.
    // Under an emulator (run-aarch64.sh) BF16 dot products are emulated instruction by instruction,
    // so the widest N is left out there: the splits are the same.
    const bool emulated = std::getenv("NATIVE_TEST_EMULATED") != nullptr;
    for (int64_t M : {1, 5, 16, 17, 64, 193, 301})
      for (int64_t N : {1, 16, 100, 1280})
        for (int64_t K : {17, 1280}) {
          if (emulated && N == 1280) continue;
          const std::vector<float> X = randoms(M * K, -1, 1), Wf = randoms(N * K, -1, 1);
          std::vector<bf16_t> Wb(N * K);
          for (int64_t i = 0; i < N * K; ++i) Wb[i] = f32_to_bf16(Wf[i]);
          std::vector<float> want_b(M * N), want_fast(M * N), want_f(M * N);
          ks.gemm_bf16(X.data(), K, Wb.data(), want_b.data(), N, M, 0, N, K);
          ks.gemm_bf16_fast(X.data(), K, Wb.data(), want_fast.data(), N, M, 0, N, K);
          ks.gemm_f32(X.data(), K, Wf.data(), K, want_f.data(), N, M, 0, N, K);
          const PackedBf16 packed(Wb.data(), N, K);
          std::vector<float> want_packed(M * N), want_packed_fast(M * N);
          if (ks.gemm_bf16_packed) {
            ks.gemm_bf16_packed(X.data(), K, packed.data(), want_packed.data(), N, M, 0, N, K);
            ks.gemm_bf16_packed_fast(X.data(), K, packed.data(), want_packed_fast.data(), N, M, 0, N, K);
          }
          for (ThreadPool& pool : pools) {
            std::vector<float> got_b(M * N, NAN), got_fast(M * N, NAN), got_f(M * N, NAN);
            matmul_bf16(pool, X.data(), Wb.data(), got_b.data(), M, N, K, Precision::Exact);
            matmul_bf16(pool, X.data(), Wb.data(), got_fast.data(), M, N, K, Precision::Fast);
            matmul_f32(pool, X.data(), Wf.data(), got_f.data(), M, N, K);
            if (got_b != want_b || got_fast != want_fast || got_f != want_f)
              return fmt("threads=%g M=%g N=%g K=%g differs from the single call", pool.size(), M,
                         N, K);
            if (ks.gemm_bf16_packed) {
              std::vector<float> got_packed(M * N, NAN), got_packed_fast(M * N, NAN);
              matmul_bf16_packed(pool, X.data(), packed, got_packed.data(), M, N, K, Precision::Exact);
              matmul_bf16_packed(pool, X.data(), packed, got_packed_fast.data(), M, N, K, Precision::Fast);
              if (got_packed != want_packed || got_packed_fast != want_packed_fast)
                return fmt("threads=%g M=%g N=%g K=%g: packed differs from the single call", pool.size(), M, N, K);
            }
          }
          ++shapes;
        }
    note = std::to_string(shapes) + " shapes, bitwise equal to one unthreaded kernel call (packed too where the set has it)";
    return "";
  });
}

// PackedBf16 holds the layout kernels.h states, 64-byte aligned, for small weights sharing slabs
// and for one over a quarter slab (a mapping of its own); weights keep their values while others
// in their slab are freed and new ones are placed after them.
void test_packed_placement() {
  run("packed_bf16/layout_and_slabs", [](std::string& note) -> std::string {
    struct Shape {
      int64_t N, K;
    };
    const Shape shapes[] = {{70, 33}, {896, 1280}, {64, 2}, {4160, 2050}, {3, 5}};
    std::vector<std::vector<bf16_t>> weights;
    for (const Shape& s : shapes) {
      std::vector<bf16_t> w(s.N * s.K);
      for (bf16_t& x : w) x = f32_to_bf16(uniform(-1.f, 1.f));
      weights.push_back(std::move(w));
    }
    auto check = [&](const PackedBf16& P, size_t i) -> std::string {
      const int64_t N = shapes[i].N, K = shapes[i].K, pairs = (K + 1) / 2;
      if (reinterpret_cast<uintptr_t>(P.data()) % 64 != 0) return fmt("N=%g K=%g: not 64-byte aligned", N, K);
      const int64_t panels = (N + kPanelColumns - 1) / kPanelColumns;
      for (int64_t j = 0; j < panels; ++j)
        for (int64_t c = 0; c < kPanelColumns; ++c)
          for (int64_t k = 0; k < 2 * pairs; ++k) {
            const int64_t n = j * kPanelColumns + c;
            const bf16_t want = n < N && k < K ? weights[i][n * K + k] : 0;
            if (P.data()[j * pairs * 2 * kPanelColumns + k / 2 * 2 * kPanelColumns + 2 * c + k % 2] != want)
              return fmt("N=%g K=%g: W[%g, %g] misplaced", N, K, n, k);
          }
      return "";
    };
    std::vector<PackedBf16> packed;
    for (size_t i = 0; i < weights.size(); ++i) packed.emplace_back(weights[i].data(), shapes[i].N, shapes[i].K);
    packed[0] = PackedBf16();  // frees nothing yet: its slab holds the others
    packed[2] = PackedBf16(weights[2].data(), shapes[2].N, shapes[2].K);
    for (size_t i = 1; i < weights.size(); ++i)
      if (std::string e = check(packed[i], i); !e.empty()) return e;
    note = "5 shapes (odd N and K, one of 17 MB)";
    return "";
  });
}

// A large buffer starts on a 2 MiB boundary, keeps its values when it shrinks or is resized within
// what it holds, and moves to new memory only when it grows past that.
void test_large_buffer() {
  run("large_buffer/grow_and_shrink", [](std::string& note) -> std::string {
    LargeBuffer<float> buffer(1000);
    const float* first = buffer.data();
    if (reinterpret_cast<uintptr_t>(first) % (size_t{2} << 20) != 0) return "not on a 2 MiB boundary";
    for (int64_t i = 0; i < 1000; ++i) buffer.data()[i] = static_cast<float>(i);
    buffer.resize(10);
    buffer.resize(1000);
    if (buffer.data() != first || buffer.size() != 1000) return "resizing within the capacity moved the buffer";
    for (int64_t i = 0; i < 1000; ++i)
      if (buffer.data()[i] != static_cast<float>(i)) return fmt("value %g lost by a shrink", i);
    buffer.resize(3 << 20);  // 12 MiB: past the capacity
    if (buffer.size() != (3 << 20) || reinterpret_cast<uintptr_t>(buffer.data()) % (size_t{2} << 20) != 0)
      return "the grown buffer is not 12 MiB on a 2 MiB boundary";
    for (int64_t i = 0; i < buffer.size(); i += 4096) buffer.data()[i] = 1.f;  // every page is writable
    note = "1,000 floats, shrunk to 10 and back, then 12 MiB";
    return "";
  });
}

// Runs in a child process (the choice is read once per process) before any thread exists.
void test_dispatch() {
  run("dispatch/env_override", [](std::string& note) -> std::string {
    const KernelSet* best = nullptr;
    for (const char* name : kernel_set_names())
      if (!best) best = kernels_by_name(name);
    std::vector<const char*> names = kernel_set_names();
    names.insert(names.end(), {"bogus", ""});
    for (const char* name : names) {
      const KernelSet* named = kernels_by_name(name);
      const char* want = named ? named->name : best->name;
      const pid_t pid = fork();
      if (pid == 0) {
        setenv("SCRIPTORIUM_KERNELS", name, 1);
        const char* got = active_kernels().name;
        _exit(std::strcmp(got, want) != 0);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return std::string("SCRIPTORIUM_KERNELS=") + name + " picked the wrong set";
    }
    if (kernels_by_name("bogus") || kernels_by_name(nullptr) || !kernels_by_name("scalar"))
      return std::string("kernels_by_name: unknown names must give nullptr, scalar always exists");
    note = std::string("active without override: ") + active_kernels().name;
    return "";
  });
}

}  // namespace

int main() {
  scriptorium_test::seed_inputs(12345);
  test_dispatch();
  for (const char* name : kernel_set_names()) {
    const KernelSet* ks = kernels_by_name(name);
    if (!ks) {
      std::printf("skip  %s (the CPU lacks it)\n", name);
      continue;
    }
    test_gemm(*ks);
    test_gemm_fast(*ks);
    test_gemm_packed(*ks);
    test_gemm_nn(*ks);
    test_row_invariance(*ks);
    test_rmsnorm(*ks);
    test_swiglu(*ks);
    test_gelu_erf(*ks);
    test_softmax(*ks);
    test_attention(*ks);
    test_attention_f16(*ks);
    test_to_f16(*ks);
    test_from_f16(*ks);
    test_axpy(*ks);
    test_argmax(*ks);
    test_sum_exp(*ks);
    test_log_sum_exp(*ks);
  }
  test_rope();
  test_packed_placement();
  test_large_buffer();
  test_thread_pool();
  test_matmul();
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
