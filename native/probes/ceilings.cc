// Machine ceilings for the benchmarks. The ISA-specific loops carry target attributes and run only
// after __builtin_cpu_supports agrees, so this file builds with the default flags like the rest.
#include "probes/ceilings.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <new>
#include <stdexcept>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/ops.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_* (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace scriptorium {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr int64_t kReadBlock = 256 << 10;  // bytes per read task: whole 256-byte loop steps
constexpr double kMinRound = 0.02;          // seconds: shorter rounds only calibrate the rep count
constexpr int64_t kTasksPerThread = 8;

// GEMM blocks small enough that X, W and Y of one thread stay in its L2.
constexpr int64_t kGemmM = 64, kGemmN = 128, kGemmK = 512;

// Independent multiply-add chains per loop step: enough to cover latency x ports on current cores.
constexpr int kChains512 = 16, kChains256 = 12;

/* bytes[0, n) folded with XOR; n a multiple of 256 */
using ReadFn = uint64_t (*)(const uint8_t* p, int64_t n);

#if defined(__aarch64__)
uint64_t read_neon(const uint8_t* p, int64_t n) {
  uint8x16_t a = vdupq_n_u8(0), b = a, c = a, d = a;
  for (int64_t i = 0; i < n; i += 64) {
    a = veorq_u8(a, vld1q_u8(p + i));
    b = veorq_u8(b, vld1q_u8(p + i + 16));
    c = veorq_u8(c, vld1q_u8(p + i + 32));
    d = veorq_u8(d, vld1q_u8(p + i + 48));
  }
  const uint64x2_t x = vreinterpretq_u64_u8(veorq_u8(veorq_u8(a, b), veorq_u8(c, d)));
  return vgetq_lane_u64(x, 0) ^ vgetq_lane_u64(x, 1);
}

constexpr int kChainsNeon = 16;

/* sum of kChainsNeon chains of `steps` dependent F32 FMAs, 4 lanes each */
float fma_chains_neon(int64_t steps) {
  float32x4_t acc[kChainsNeon];
  for (int j = 0; j < kChainsNeon; ++j) acc[j] = vdupq_n_f32(static_cast<float>(j));
  const float32x4_t half = vdupq_n_f32(0.5f), one = vdupq_n_f32(1.0f);  // acc -> 2: stays finite
  for (int64_t s = 0; s < steps; ++s) {
    #pragma GCC unroll 16
    for (int j = 0; j < kChainsNeon; ++j) acc[j] = vfmaq_f32(one, acc[j], half);
  }
  for (int j = 1; j < kChainsNeon; ++j) acc[0] = vaddq_f32(acc[0], acc[j]);
  return vaddvq_f32(acc[0]);
}

/* sum of kChainsNeon chains of `steps` dependent BFDOTs (4 lanes x 2 products each) */
__attribute__((target("arch=armv8.2-a+bf16"))) float bfdot_chains(int64_t steps) {
  float32x4_t acc[kChainsNeon];
  for (int j = 0; j < kChainsNeon; ++j) acc[j] = vdupq_n_f32(static_cast<float>(j));
  // 0.5 in BF16 for both operands: every step adds 0.5 to each lane, far from overflow. The bits go
  // through a register: as an immediate GCC 12 writes them as an FP16 move, which needs FEAT_FP16.
  volatile uint16_t half_bits = 0x3f00;
  const bfloat16x8_t half = vreinterpretq_bf16_u16(vdupq_n_u16(half_bits));
  for (int64_t s = 0; s < steps; ++s) {
    #pragma GCC unroll 16
    for (int j = 0; j < kChainsNeon; ++j) acc[j] = vbfdotq_f32(acc[j], half, half);
  }
  for (int j = 1; j < kChainsNeon; ++j) acc[0] = vaddq_f32(acc[0], acc[j]);
  return vaddvq_f32(acc[0]);
}
#else
uint64_t read_sse2(const uint8_t* p, int64_t n) {
  __m128i a = _mm_setzero_si128(), b = a, c = a, d = a;
  for (int64_t i = 0; i < n; i += 64) {
    a = _mm_xor_si128(a, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i)));
    b = _mm_xor_si128(b, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 16)));
    c = _mm_xor_si128(c, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 32)));
    d = _mm_xor_si128(d, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 48)));
  }
  const __m128i x = _mm_xor_si128(_mm_xor_si128(a, b), _mm_xor_si128(c, d));
  return static_cast<uint64_t>(_mm_cvtsi128_si64(x)) ^ static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(x, x)));
}

__attribute__((target("avx2"))) uint64_t read_avx2(const uint8_t* p, int64_t n) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (int64_t i = 0; i < n; i += 128) {
    a = _mm256_xor_si256(a, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    b = _mm256_xor_si256(b, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    c = _mm256_xor_si256(c, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    d = _mm256_xor_si256(d, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), x);
  return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
}

__attribute__((target("avx512f"))) uint64_t read_avx512(const uint8_t* p, int64_t n) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  for (int64_t i = 0; i < n; i += 256) {
    a = _mm512_xor_si512(a, _mm512_load_si512(p + i));
    b = _mm512_xor_si512(b, _mm512_load_si512(p + i + 64));
    c = _mm512_xor_si512(c, _mm512_load_si512(p + i + 128));
    d = _mm512_xor_si512(d, _mm512_load_si512(p + i + 192));
  }
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d)));
  uint64_t x = 0;
  for (uint64_t lane : lanes) x ^= lane;
  return x;
}

/* sum of kChains512 chains of `steps` dependent F32 FMAs, 16 lanes each */
__attribute__((target("avx512f"))) float fma_chains_avx512(int64_t steps) {
  __m512 acc[kChains512];
  for (int j = 0; j < kChains512; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);  // acc -> 2: stays finite
  for (int64_t s = 0; s < steps; ++s) {
    #pragma GCC unroll 16
    for (int j = 0; j < kChains512; ++j) acc[j] = _mm512_fmadd_ps(acc[j], half, one);
  }
  for (int j = 1; j < kChains512; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  return _mm512_reduce_add_ps(acc[0]);
}

/* sum of kChains256 chains of `steps` dependent F32 FMAs, 8 lanes each */
__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t steps) {
  __m256 acc[kChains256];
  for (int j = 0; j < kChains256; ++j) acc[j] = _mm256_set1_ps(static_cast<float>(j));
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  for (int64_t s = 0; s < steps; ++s) {
    #pragma GCC unroll 12
    for (int j = 0; j < kChains256; ++j) acc[j] = _mm256_fmadd_ps(acc[j], half, one);
  }
  for (int j = 1; j < kChains256; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc[0]);
  float sum = 0;
  for (float lane : lanes) sum += lane;
  return sum;
}

/* sum of kChains512 chains of `steps` dependent VDPBF16PS (16 lanes x 2 products each) */
__attribute__((target("avx512f,avx512bf16"))) float dpbf16_chains(int64_t steps) {
  __m512 acc[kChains512];
  for (int j = 0; j < kChains512; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
  // 0.5 in BF16 for both operands: every step adds 0.5 to each lane, far from overflow.
  const __m512bh half = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3f00));
  for (int64_t s = 0; s < steps; ++s) {
    #pragma GCC unroll 16
    for (int j = 0; j < kChains512; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], half, half);
  }
  for (int j = 1; j < kChains512; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  return _mm512_reduce_add_ps(acc[0]);
}
#endif

struct ReadLoop {
  const char* name;
  ReadFn fn;
};

ReadLoop widest_read_loop() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512", read_avx512};
  if (__builtin_cpu_supports("avx2")) return {"avx2", read_avx2};
  return {"sse2", read_sse2};
#else
  return {"neon", read_neon};
#endif
}

/* best 1e9 bytes/s of `passes` multi-threaded reads over a fresh buffer of `bytes` */
double read_bandwidth(ThreadPool& pool, const ReadLoop& loop, int64_t bytes, int passes) {
  const int64_t blocks = std::max<int64_t>(1, bytes / kReadBlock);
  const int64_t total = blocks * kReadBlock;
  auto* buffer = static_cast<uint8_t*>(::operator new(static_cast<size_t>(total), std::align_val_t(64)));
  // First touch from the pool, so the pages are spread as the reads will be.
  pool.parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    std::memset(buffer + b0 * kReadBlock, 0x5a, static_cast<size_t>((b1 - b0) * kReadBlock));
  });
  std::atomic<uint64_t> sink{0};  // an observable result, so no read can be optimised away
  double best = 0;
  for (int pass = 0; pass < passes; ++pass) {
    const auto start = Clock::now();
    pool.parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      sink.fetch_xor(loop.fn(buffer + b0 * kReadBlock, (b1 - b0) * kReadBlock), std::memory_order_relaxed);
    });
    best = std::max(best, static_cast<double>(total) / seconds_since(start) / 1e9);
  }
  ::operator delete(buffer, std::align_val_t(64));
  return best;
}

// Runs work(reps) as kTasksPerThread tasks per thread in rounds until `seconds` have passed and
// returns the best round's units/s, one rep being `units_per_rep` units. Rounds shorter than
// kMinRound double reps and do not count.
double best_rate(ThreadPool& pool, double seconds, double units_per_rep, const std::function<void(int64_t)>& work) {
  const int64_t tasks = kTasksPerThread * pool.size();
  int64_t reps = 1;
  double best = 0;
  const auto start = Clock::now();
  for (;;) {
    const auto round = Clock::now();
    pool.parallel_for(tasks, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) work(reps);
    });
    const double elapsed = seconds_since(round);
    if (elapsed < kMinRound) {
      reps *= 2;
      continue;
    }
    best = std::max(best, static_cast<double>(tasks * reps) * units_per_rep / elapsed);
    if (seconds_since(start) >= seconds) return best;
  }
}

enum class GemmKind { F32, Bf16, Bf16Fast };

/* GFLOP/s of the set's gemm_f32, or of its BF16 product of that precision (gemm_bf16 or
   gemm_bf16_fast; with `packed`, gemm_bf16_packed or _fast on the weights packed once), on
   [kGemmM, kGemmK] x [kGemmN, kGemmK]^T */
double gemm_gflops(ThreadPool& pool, const KernelSet& kernels, GemmKind kind, bool packed, double seconds) {
  std::vector<float> X(kGemmM * kGemmK), Wf(kGemmN * kGemmK);
  std::vector<bf16_t> Wb(kGemmN * kGemmK);
  for (size_t i = 0; i < X.size(); ++i) X[i] = static_cast<float>(static_cast<int64_t>(i * 37 % 17) - 8) / 8.f;
  for (size_t i = 0; i < Wf.size(); ++i) {
    Wf[i] = static_cast<float>(static_cast<int64_t>(i * 53 % 13) - 6) / 16.f;
    Wb[i] = f32_to_bf16(Wf[i]);
  }
  const PackedBf16 P = packed ? PackedBf16(Wb.data(), kGemmN, kGemmK) : PackedBf16();
  const auto bf16 = kind == GemmKind::Bf16 ? (packed ? kernels.gemm_bf16_packed : kernels.gemm_bf16)
                                           : (packed ? kernels.gemm_bf16_packed_fast : kernels.gemm_bf16_fast);
  const bf16_t* W = packed ? P.data() : Wb.data();
  const double flops = 2.0 * kGemmM * kGemmN * kGemmK;
  return best_rate(pool, seconds, flops / 1e9, [&](int64_t reps) {
    thread_local std::vector<float> Y;  // per thread, so it stays in that core's cache
    Y.resize(kGemmM * kGemmN);
    for (int64_t r = 0; r < reps; ++r) {
      if (kind == GemmKind::F32)
        kernels.gemm_f32(X.data(), kGemmK, Wf.data(), kGemmK, Y.data(), kGemmN, kGemmM, 0, kGemmN, kGemmK);
      else
        bf16(X.data(), kGemmK, W, Y.data(), kGemmN, kGemmM, 0, kGemmN, kGemmK);
    }
  });
}

/* The BF16 ceiling of a precision: its fastest product, on stored or (where the set has them) packed weights */
double best_bf16_gflops(ThreadPool& pool, const KernelSet& kernels, GemmKind kind, double seconds) {
  const double stored = gemm_gflops(pool, kernels, kind, false, seconds);
  return kernels.gemm_bf16_packed ? std::max(stored, gemm_gflops(pool, kernels, kind, true, seconds)) : stored;
}

// Steps per rep of the instruction-peak loops: a few microseconds of work.
constexpr int64_t kChainSteps = 1024;

/* GFLOP/s of `chains(kChainSteps)` on every thread; one call yields flops_per_call */
double chain_gflops(ThreadPool& pool, double seconds, float (*chains)(int64_t), double flops_per_call) {
  std::atomic<uint32_t> sink{0};  // an observable result, so no chain can be optimised away
  return best_rate(pool, seconds, flops_per_call / 1e9, [&](int64_t reps) {
    float sum = 0;
    for (int64_t r = 0; r < reps; ++r) sum += chains(kChainSteps);
    uint32_t bits;
    std::memcpy(&bits, &sum, 4);
    sink.fetch_xor(bits, std::memory_order_relaxed);
  });
}

/* GHz of one core: 8 dependent register adds per step retire at one per cycle */
double clock_ghz() {
#if defined(__x86_64__)
  constexpr int64_t kSteps = 4'000'000;
  double best = 0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    uint64_t x = 0;
    const uint64_t one = 1;
    const auto start = Clock::now();
    for (int64_t s = 0; s < kSteps; ++s)
      asm volatile(
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
          : "+r"(x)
          : "r"(one));
    best = std::max(best, 8.0 * kSteps / seconds_since(start) / 1e9);
  }
  return best;
#else
  return 0;
#endif
}

}  // namespace

void CeilingOptions::validate() const {
  if (buffer_bytes < kReadBlock) throw std::invalid_argument("ceilings: the read buffer must hold at least 256 KiB");
  if (passes < 1 || passes > 1000) throw std::invalid_argument("ceilings: passes must be between 1 and 1000");
  if (!(seconds > 0) || seconds > 600) throw std::invalid_argument("ceilings: seconds must be in (0, 600]");
}

Ceilings measure_ceilings(ThreadPool& pool, const CeilingOptions& options) {
  options.validate();
  const KernelSet& kernels = active_kernels();
  const std::string set = kernels.name;
  Ceilings c;
  c.kernels = set;
  c.threads = pool.size();
  c.clock_ghz = clock_ghz();
  const ReadLoop loop = widest_read_loop();
  c.read_simd = loop.name;
  c.read_gbps = read_bandwidth(pool, loop, options.buffer_bytes, options.passes);
  c.gemm_f32_gflops = gemm_gflops(pool, kernels, GemmKind::F32, false, options.seconds);
  c.gemm_bf16_gflops = best_bf16_gflops(pool, kernels, GemmKind::Bf16, options.seconds);
  c.gemm_bf16_fast_gflops = best_bf16_gflops(pool, kernels, GemmKind::Bf16Fast, options.seconds);
#if defined(__x86_64__)
  const double fma512 = 2.0 * 16 * kChains512 * kChainSteps, fma256 = 2.0 * 8 * kChains256 * kChainSteps;
  if (set == "avx512" || set == "avx512bf16") c.peak_f32_gflops = chain_gflops(pool, options.seconds, fma_chains_avx512, fma512);
  if (set == "avx2") c.peak_f32_gflops = chain_gflops(pool, options.seconds, fma_chains_avx2, fma256);
  // Without BF16 dot products gemm_bf16 widens the weights and multiplies with the F32 FMA.
  c.peak_bf16_gflops = c.peak_f32_gflops;
  // One VDPBF16PS: 16 lanes x 2 products x 2 FLOPs, halved as each activation is two BF16 halves.
  const double dpbf16 = 16.0 * 2 * 2 / 2 * kChains512 * kChainSteps;
  if (set == "avx512bf16") c.peak_bf16_gflops = chain_gflops(pool, options.seconds, dpbf16_chains, dpbf16);
#elif defined(__aarch64__)
  if (set == "neon" || set == "neonbf16") c.peak_f32_gflops = chain_gflops(pool, options.seconds, fma_chains_neon, 2.0 * 4 * kChainsNeon * kChainSteps);
  c.peak_bf16_gflops = c.peak_f32_gflops;
  // neonbf16's exact products on weights as stored widen them for the F32 FMA; its packed ones take
  // two BFDOTs per multiply-add (4 lanes x 2 products x 2 FLOPs, halved): the faster of the two.
  const double bfdot = 4.0 * 2 * 2 / 2 * kChainsNeon * kChainSteps;
  if (set == "neonbf16") c.peak_bf16_gflops = std::max(c.peak_f32_gflops, chain_gflops(pool, options.seconds, bfdot_chains, bfdot));
#endif
  return c;
}

}  // namespace scriptorium
