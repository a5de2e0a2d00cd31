// Fast precision's attention: the kernel sets' gemm_nn_bf16 against float64, and attention() in both
// precisions against a float64 reference on odd shapes (head dims 7, 64, 80, 128, odd key counts,
// grouped kv heads, masked rows, an additive bias). Prints one line per test and "N passed,
// M failed"; exits non-zero on any failure.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "cpu/attention.h"
#include "cpu/kernels.h"
#include "test/test_harness.h"

using namespace scriptorium;

namespace {

using scriptorium_test::fmt;
using scriptorium_test::has_bf16_dot_products;
using scriptorium_test::randoms;
using scriptorium_test::uniform;
using scriptorium_test::finish;
using scriptorium_test::run;

// gemm_nn_bf16 against float64 on the BF16-rounded activations: |y - ref| <= tol * sum_k |x_k b_k|.
// The products of BF16 values are exact in F32, so only the F32 accumulation rounds (as
// gemm_bf16_fast's bound in kernels_test).
constexpr double kDotTol = 2e-5;
const double kBf16Unit = std::ldexp(1.0, -8);  // largest relative error of one rounding to BF16 (8 bits)

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
  for (const char* name : kernel_set_names()) {
    const KernelSet* ks = kernels_by_name(name);
    if (ks == nullptr) {
      std::printf("skip  %s/gemm_nn_bf16 (the CPU lacks the set)\n", name);
      continue;
    }
    if (!has_bf16_dot_products(name)) {
      run(std::string(name) + "/gemm_nn_bf16 is absent: its attention stays F32", [&] {
        return ks->gemm_nn_bf16 == nullptr ? "" : "the set has no BF16 dot products, so it must leave gemm_nn_bf16 null";
      });
      continue;
    }
    run(std::string(name) + "/gemm_nn_bf16 matches float64 on BF16-rounded activations, row invariant", [&] {
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

// ---------------------------------------------------------------- attention()

struct AttentionCase {
  int64_t batch, queries, keys, heads, kv_heads, head_dim;
  int64_t prefix, offset;  // query t sees keys [0, min(keys, max(prefix, offset + t + 1)))
  bool with_bias;
};

// SAM-like windows with a bias, CLIP's head dim, Qwen2's causal flow with grouped kv heads, and a
// decoder prefill (fewer queries than keys, causal) with an odd head dim.
const AttentionCase kCases[] = {
    {1, 197, 197, 2, 2, 64, 197, 0, true},
    {2, 37, 37, 3, 3, 80, 37, 0, false},
    {1, 50, 50, 4, 2, 128, 20, 0, false},
    {1, 30, 61, 2, 1, 7, 0, 31, true},
};

int64_t visible_keys(const AttentionCase& c, int64_t t) { return std::min(c.keys, std::max(c.prefix, c.offset + t + 1)); }
double bias_of(int64_t b, int64_t h, int64_t t, int64_t j) { return 0.5 * std::sin(1.0 + b + 2 * h + 3 * t + 0.7 * j); }

struct AttentionInputs {
  std::vector<float> q, k, v;  // [batch*queries, heads*D], [batch*keys, kv_heads*D] twice
};

// Keys span +-3 so scores reach about +-8: the softmax is peaked and a score's error shows.
AttentionInputs make_inputs(const AttentionCase& c) {
  const int64_t QW = c.heads * c.head_dim, KW = c.kv_heads * c.head_dim;
  return {randoms(c.batch * c.queries * QW), randoms(c.batch * c.keys * KW, -3, 3), randoms(c.batch * c.keys * KW)};
}

std::vector<float> run_attention(const AttentionCase& c, const AttentionInputs& in, Precision precision, ThreadPool& pool) {
  const int64_t QW = c.heads * c.head_dim, KW = c.kv_heads * c.head_dim;
  AttentionHooks hooks;
  hooks.visible_keys = [&c](int64_t t) { return visible_keys(c, t); };
  if (c.with_bias)
    hooks.bias = [&c](int64_t b, int64_t h, int64_t t, float* scores, float*) {
      for (int64_t j = 0; j < c.keys; ++j) scores[j] += static_cast<float>(bias_of(b, h, t, j));
    };
  std::vector<float> out(c.batch * c.queries * QW, NAN);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  attention(pool, AttentionTensors{in.q.data(), QW, in.k.data(), KW, in.v.data(), KW, out.data(), QW},
            AttentionShape{c.batch, c.queries, c.keys, c.heads, c.kv_heads, c.head_dim, scale}, precision, hooks);
  return out;
}

// Float64 attention of every output row: from q, k and v as given, or, `bf16`, the way fast precision
// rounds: q, k and v rounded to BF16, then the probabilities (each from its F32 value).
struct Reference {
  std::vector<double> out;
  std::vector<double> magnitude;    // per output: sum_j p_j |v_j|
  std::vector<double> slack;        // per output: what probabilities too near a BF16 rounding boundary may add
  std::vector<double> score_bound;  // per (b, t, h): max_j scale * sum_d |q_d k_jd|
};

// A probability whose F32 value the engine may compute this far (relatively) from float64's can
// round to either BF16 neighbour: F32 dot products, exp and sum.
double probability_margin(double score_bound) { return 1e-5 * (1 + score_bound); }

Reference reference(const AttentionCase& c, const AttentionInputs& in, bool bf16) {
  const int64_t D = c.head_dim, QW = c.heads * D, KW = c.kv_heads * D, group = c.heads / c.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(static_cast<float>(D)));
  auto value = [&](float x) { return bf16 ? rounded(x) : double(x); };
  const size_t outputs = c.batch * c.queries * QW;
  Reference ref{std::vector<double>(outputs), std::vector<double>(outputs), std::vector<double>(outputs),
                std::vector<double>(c.batch * c.queries * c.heads)};
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t t = 0; t < c.queries; ++t) {
        const int64_t n = visible_keys(c, t), g = h / group, row = (b * c.queries + t) * c.heads + h;
        const float* q = in.q.data() + (b * c.queries + t) * QW + h * D;
        std::vector<double> p(n), spread(n, 0.0);
        double top = -1e300, sum = 0, bound = 0;
        for (int64_t j = 0; j < n; ++j) {
          const float* k = in.k.data() + (b * c.keys + j) * KW + g * D;
          double dot = 0, size = 0;
          for (int64_t d = 0; d < D; ++d) {
            dot += value(q[d]) * value(k[d]);
            size += std::fabs(double(q[d]) * k[d]);
          }
          p[j] = scale * dot + (c.with_bias ? bias_of(b, h, t, j) : 0.0);
          top = std::max(top, p[j]);
          bound = std::max(bound, scale * size);
        }
        for (double& x : p) sum += (x = std::exp(x - top));
        for (int64_t j = 0; j < n; ++j) {
          p[j] /= sum;
          if (!bf16) continue;
          const double m = probability_margin(bound);
          spread[j] = rounded(static_cast<float>(p[j] * (1 + m))) - rounded(static_cast<float>(p[j] * (1 - m)));
          p[j] = rounded(static_cast<float>(p[j]));
        }
        ref.score_bound[row] = bound;
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0, mag = 0, slack = 0;
          for (int64_t j = 0; j < n; ++j) {
            const double vj = value(in.v[(b * c.keys + j) * KW + g * D + d]);
            acc += p[j] * vj;
            mag += p[j] * std::fabs(vj);
            slack += spread[j] * std::fabs(vj);
          }
          const int64_t i = row * D + d;
          ref.out[i] = acc;
          ref.magnitude[i] = mag;
          ref.slack[i] = slack;
        }
      }
  return ref;
}

// Largest |got - want| / (tolerance of that output); above 1 fails. tolerance(score_bound) is
// relative to the output's sum_j p_j |v_j|; the reference's slack adds to it.
template <typename Tolerance>
double worst_ratio(const AttentionCase& c, const std::vector<float>& got, const Reference& ref, Tolerance tolerance) {
  const int64_t D = c.head_dim;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double bound = ref.score_bound[i / D];
    const double err = std::fabs(got[i] - ref.out[i]) / (tolerance(bound) * ref.magnitude[i] + ref.slack[i] + 1e-30);
    worst = std::max(worst, std::isnan(err) ? 1e300 : err);
  }
  return worst;
}

// F32: the kernel tests' attention bound (a score s is off by about s * 2^-24 relatively).
double f32_tolerance(double score_bound) { return 2e-5 + 1e-6 * score_bound; }
// Fast against the unrounded reference: q and k rounded move each score by at most
// (2u + u^2) * scale * sum |q k| (u = 2^-8), which scales each probability by at most exp(2 * that);
// the probability and V roundings add u each.
double fast_tolerance(double score_bound) {
  const double score_error = (2 * kBf16Unit + kBf16Unit * kBf16Unit) * score_bound;
  return (1 + kBf16Unit) * (1 + kBf16Unit) * std::exp(2 * score_error) - 1 + f32_tolerance(score_bound);
}

std::string case_name(const AttentionCase& c) {
  return fmt("batch %g, %g queries x %g keys, %g/%g heads", c.batch, c.queries, c.keys, c.heads, c.kv_heads) +
         fmt(" of %g dims, query t sees max(%g, %g + t + 1) keys", c.head_dim, c.prefix, c.offset) +
         (c.with_bias ? ", bias" : "");
}

void test_attention_precisions() {
  ThreadPool pool(3);
  const bool bf16 = active_kernels().gemm_nn_bf16 != nullptr;
  for (const AttentionCase& c : kCases) {
    const AttentionInputs in = make_inputs(c);
    const Reference plain = reference(c, in, false), rounded_ref = reference(c, in, true);
    const std::vector<float> exact = run_attention(c, in, Precision::Exact, pool);
    const std::vector<float> fast = run_attention(c, in, Precision::Fast, pool);
    run("exact attention matches float64 (" + case_name(c) + ")", [&] {
      const double r = worst_ratio(c, exact, plain, f32_tolerance);
      return r <= 1 ? std::string() : fmt("error %.3g times the F32 bound", r);
    });
    if (!bf16) {
      run("fast attention is the exact one without gemm_nn_bf16 (" + case_name(c) + ")", [&] {
        return std::memcmp(fast.data(), exact.data(), fast.size() * sizeof(float)) == 0 ? "" : "fast differs from exact";
      });
      continue;
    }
    run("fast attention rounds q, k, p and v once to BF16 (" + case_name(c) + ")", [&] {
      const double emulated = worst_ratio(c, fast, rounded_ref, f32_tolerance);
      const double bound = worst_ratio(c, fast, plain, fast_tolerance);
      std::printf("      error / bound: %.3f against float64 rounding as fast does, %.3f against plain float64\n", emulated,
                  bound);
      if (emulated > 1) return fmt("error %.3g times the F32 bound against float64 rounding as fast does", emulated);
      if (bound > 1) return fmt("error %.3g times the fast bound against float64", bound);
      return std::string();
    });
  }
}

// The kernel set is chosen once per process, so each set without BF16 dot products gets a child
// process (forked before any thread exists) whose fast attention must equal its exact one bitwise.
void test_fallback_sets() {
  for (const char* name : kernel_set_names()) {
    const KernelSet* ks = kernels_by_name(name);
    if (ks == nullptr || ks->gemm_nn_bf16 != nullptr) continue;
    run(std::string("fast attention under SCRIPTORIUM_KERNELS=") + name + " is its exact attention, bitwise", [&] {
      const pid_t pid = fork();
      if (pid == 0) {
        setenv("SCRIPTORIUM_KERNELS", name, 1);
        ThreadPool pool(2);
        const AttentionCase& c = kCases[0];
        const AttentionInputs in = make_inputs(c);
        const std::vector<float> exact = run_attention(c, in, Precision::Exact, pool);
        const std::vector<float> fast = run_attention(c, in, Precision::Fast, pool);
        const bool same = std::strcmp(active_kernels().name, name) == 0 &&
                          std::memcmp(fast.data(), exact.data(), fast.size() * sizeof(float)) == 0;
        _exit(same ? 0 : 1);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "" : "fast differs from exact (or the set was not taken)";
    });
  }
}

}  // namespace

int main() {
  scriptorium_test::seed_inputs(31337);
  test_fallback_sets();  // first: the children must choose their set before this process does
  std::printf("kernels: %s\n", active_kernels().name);
  test_gemm_nn_bf16();
  test_attention_precisions();
  return finish();
}
