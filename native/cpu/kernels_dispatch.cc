// Runtime choice of kernel set: the best the CPU supports, or SCRIPTORIUM_KERNELS when that names
// a supported set. The environment is read once, on the first active_kernels() call. On x86-64,
// libgcc's __builtin_cpu_supports also checks (XGETBV) that the OS saves YMM/ZMM state. On arm64
// Linux the kernel's hardware capabilities (getauxval) say what the CPU has; macOS runs only on
// cores with NEON.
#include <cstdlib>
#include <cstring>

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "cpu/kernels.h"

namespace scriptorium {

namespace {

struct Entry {
  const char* name;
  const KernelSet& (*get)();
  bool (*supported)();
};

bool always() { return true; }

#if defined(__x86_64__)
bool has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

// DQ is required too: kernels_avx512bf16.cc is built with -mavx512dq and reuses the avx512 set.
bool has_avx512bf16() { return has_avx512() && __builtin_cpu_supports("avx512bf16"); }

void detect_features() { __builtin_cpu_init(); }

// Best first.
constexpr Entry kEntries[] = {
    {"avx512bf16", kernels_avx512bf16, has_avx512bf16},
    {"avx512", kernels_avx512, has_avx512},
    {"avx2", kernels_avx2, has_avx2},
    {"scalar", kernels_scalar, always},
};
#elif defined(__aarch64__)
void detect_features() {}

#if defined(__linux__)
bool has_neon() { return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0; }
bool has_neonbf16() { return has_neon() && (getauxval(AT_HWCAP2) & HWCAP2_BF16) != 0; }
#else
// Elsewhere (macOS) only the baseline is assumed: the BF16 set is not chosen, which is slower, never wrong.
bool has_neon() { return true; }
bool has_neonbf16() { return false; }
#endif

// Best first.
constexpr Entry kEntries[] = {
    {"neonbf16", kernels_neonbf16, has_neonbf16},
    {"neon", kernels_neon, has_neon},
    {"scalar", kernels_scalar, always},
};
#endif

const KernelSet& best() {
  detect_features();
  for (const Entry& e : kEntries)
    if (e.supported()) return e.get();
  return kernels_scalar();
}

}  // namespace

const std::vector<const char*>& kernel_set_names() {
  static const std::vector<const char*> names = [] {
    std::vector<const char*> v;
    for (const Entry& e : kEntries) v.push_back(e.name);
    return v;
  }();
  return names;
}

const KernelSet* kernels_by_name(const char* name) {
  if (name == nullptr) return nullptr;
  detect_features();
  for (const Entry& e : kEntries)
    if (std::strcmp(e.name, name) == 0) return e.supported() ? &e.get() : nullptr;
  return nullptr;
}

const KernelSet& active_kernels() {
  static const KernelSet& set = []() -> const KernelSet& {
    const KernelSet* named = kernels_by_name(std::getenv("SCRIPTORIUM_KERNELS"));
    return named != nullptr ? *named : best();
  }();
  return set;
}

}  // namespace scriptorium
