// The harness of the native test programs: run() one named check, which returns "" when it holds or
// says what went wrong (a thrown exception fails the check too), then finish() prints the counts and
// gives main's exit status. fmt() writes a check's reason; uniform() and randoms() draw the inputs
// from one generator that each program seeds with its own fixed number (seed_inputs, first thing in
// main), so a failing input reproduces.
#pragma once

#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace scriptorium_test {

inline int g_passed = 0;
inline int g_failed = 0;

inline void run(const std::string& name, const std::function<std::string()>& check) {
  std::string error;
  try {
    error = check();
  } catch (const std::exception& e) {
    error = std::string("threw: ") + e.what();
  }
  if (error.empty()) {
    ++g_passed;
    std::printf("ok    %s\n", name.c_str());
  } else {
    ++g_failed;
    std::printf("FAIL  %s: %s\n", name.c_str(), error.c_str());
  }
  std::fflush(stdout);
}

/** A check's reason, printf-style over up to five numbers. */
inline std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0, double e = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d, e);
  return buf;
}

/** Whether a kernel set has BF16 dot products: gemm_bf16_fast, gemm_nn_bf16 and the packed products. */
inline bool has_bf16_dot_products(const char* set) {
  return std::strcmp(set, "avx512bf16") == 0 || std::strcmp(set, "neonbf16") == 0;
}

inline std::mt19937 g_inputs;

inline void seed_inputs(unsigned seed) { g_inputs.seed(seed); }

/** One draw, uniform in [lo, hi). */
inline float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(g_inputs); }

/** n draws, uniform in [lo, hi). */
inline std::vector<float> randoms(size_t n, float lo = -1.f, float hi = 1.f) {
  std::vector<float> v(n);
  for (float& x : v) x = uniform(lo, hi);
  return v;
}

/** Prints "N passed, M failed"; 0 when nothing failed, else 1. */
inline int finish() {
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}

}  // namespace scriptorium_test
