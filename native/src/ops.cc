// Threaded matmul drivers: N is split across the pool; every chunk covers all M rows, so each
// thread streams its own columns of W once (the kernels block over M and N for cache reuse).
// matmul_bf16 on many rows splits M instead (see row_chunk).
#include "ops.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace scriptorium {

namespace {

constexpr int64_t kColumnGrain = 16;  // columns: whole 4- and 8-column kernel tiles
constexpr int64_t kSmallM = 16;       // up to here matmul is W-bandwidth bound (decode)
constexpr int64_t kRowChunkMin = 48;  // rows: whole 3-, 4- and 6-row kernel tiles and 16-row blocks
constexpr int64_t kEpilogueFloats = 1 << 18;  // Y rows per epilogue block: about 1 MiB, an L2's worth

// The chunk lambda captures one pointer and one function pointer, which std::function stores
// in place: a dispatch allocates nothing.
template <typename WT>
struct Args {
  const float* X;
  const WT* W;
  float* Y;
  int64_t M, N, K;
  const RowEpilogue* epilogue = nullptr;
};

// Small M: the finest grain, so the pool balances W streaming evenly across threads.
// Large M: about two chunks per thread, so each chunk amortises its pass over X.
int64_t column_grain(const ThreadPool& pool, int64_t M, int64_t N) {
  if (M <= kSmallM) return kColumnGrain;
  const int64_t chunks = 2 * static_cast<int64_t>(pool.size());
  const int64_t per_chunk = (N + chunks - 1) / chunks;
  return (per_chunk + kColumnGrain - 1) / kColumnGrain * kColumnGrain;
}

// Rows per chunk when matmul_bf16 splits M, or 0 to split N. A BF16 kernel converts the X rows
// of its call before multiplying (avx512bf16: into hi and lo parts), so a split over N converts
// every row once per chunk; a split over M converts each row once. Each chunk then streams all of
// W, once per block of converted rows, which L3 serves. About two chunks per thread, as for N.
int64_t row_chunk(const ThreadPool& pool, int64_t M) {
  const int64_t chunks = 2 * static_cast<int64_t>(pool.size());
  if (pool.size() == 1 || M < kRowChunkMin * chunks) return 0;
  const int64_t per_chunk = (M + chunks - 1) / chunks;
  return (per_chunk + 11) / 12 * 12;
}

// Rows of Y per epilogue block on the row split: whole 12-row groups of about kEpilogueFloats, and
// at least kRowChunkMin rows so each block's pass over W still serves many rows.
int64_t epilogue_rows(int64_t N) {
  return std::max<int64_t>(kRowChunkMin, kEpilogueFloats / N / 12 * 12);
}

using GemmBf16 = decltype(KernelSet::gemm_bf16);

GemmBf16 gemm_for(Precision precision) {
  const KernelSet& kernels = active_kernels();
  return precision == Precision::Fast ? kernels.gemm_bf16_fast : kernels.gemm_bf16;
}

/* Y[M,N] = X[M,K] @ W[N,K]^T through `gemm`, whose column ranges must start at multiples of `grain` */
void run_bf16(ThreadPool& pool, const Args<bf16_t>& a, GemmBf16 gemm, int64_t grain) {
  if (const int64_t rows = row_chunk(pool, a.M); rows > 0) {
    pool.parallel_for(a.M, rows, [&a, gemm](int64_t m0, int64_t m1) {
      const int64_t block = a.epilogue ? epilogue_rows(a.N) : m1 - m0;
      for (int64_t b0 = m0; b0 < m1; b0 += block) {
        const int64_t b1 = std::min(m1, b0 + block);
        gemm(a.X + b0 * a.K, a.K, a.W, a.Y + b0 * a.N, a.N, b1 - b0, 0, a.N, a.K);
        if (a.epilogue) (*a.epilogue)(b0, b1);
      }
    });
    return;
  }
  const int64_t columns = (column_grain(pool, a.M, a.N) + grain - 1) / grain * grain;
  pool.parallel_for(a.N, columns, [&a, gemm](int64_t n0, int64_t n1) {
    gemm(a.X, a.K, a.W, a.Y, a.N, a.M, n0, n1, a.K);
  });
  if (a.epilogue) pool.parallel_for(a.M, std::max<int64_t>(1, 16384 / a.N), *a.epilogue);
}

}  // namespace

/* Y[M,N] = X[M,K] @ W[N,K]^T, W bf16 */
void matmul_bf16(ThreadPool& pool, const float* X, const bf16_t* W, float* Y, int64_t M, int64_t N,
                 int64_t K, Precision precision, const RowEpilogue& epilogue) {
  run_bf16(pool, {X, W, Y, M, N, K, epilogue ? &epilogue : nullptr}, gemm_for(precision), 1);
}

PackedBf16::PackedBf16(const bf16_t* W, int64_t N, int64_t K) {
  const int64_t pairs = (K + 1) / 2, panels = (N + kPanelColumns - 1) / kPanelColumns;
  const int64_t panel = pairs * 2 * kPanelColumns;  // elements
  const size_t bytes = static_cast<size_t>(panels * panel) * sizeof(bf16_t);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  madvise(p, bytes, MADV_HUGEPAGE);  // a hint: fewer page faults while packing, fewer TLB misses after
  data_ = std::unique_ptr<bf16_t, Unmap>(static_cast<bf16_t*>(p), Unmap{bytes});
  // Pairs of k move as one 32-bit word: W row n's pair q goes to word q * kPanelColumns + n % 64 of its panel.
  uint32_t* P = reinterpret_cast<uint32_t*>(p);
  for (int64_t n = 0; n < N; ++n) {
    uint32_t* column = P + n / kPanelColumns * (panel / 2) + n % kPanelColumns;
    const bf16_t* w = W + n * K;
    for (int64_t q = 0; q < K / 2; ++q) {
      uint32_t pair;
      std::memcpy(&pair, w + 2 * q, sizeof pair);
      column[q * kPanelColumns] = pair;
    }
    if (K % 2) column[K / 2 * kPanelColumns] = w[K - 1];  // the low half is k, the high half stays zero
  }
}

void PackedBf16::Unmap::operator()(bf16_t* p) const { munmap(p, bytes); }

void matmul_bf16_packed(ThreadPool& pool, const float* X, const PackedBf16& W, float* Y, int64_t M, int64_t N,
                        int64_t K, Precision precision, const RowEpilogue& epilogue) {
  const KernelSet& kernels = active_kernels();
  const GemmBf16 gemm = precision == Precision::Fast ? kernels.gemm_bf16_packed_fast : kernels.gemm_bf16_packed;
  run_bf16(pool, {X, W.data(), Y, M, N, K, epilogue ? &epilogue : nullptr}, gemm, kPanelColumns);
}

void matmul_bf16_group(ThreadPool& pool, const std::vector<MatmulBf16>& group, Precision precision) {
  int64_t columns = 0;
  for (const MatmulBf16& p : group) columns += p.N;
  const GemmBf16 gemm = gemm_for(precision);
  const std::vector<MatmulBf16>* g = &group;
  // Chunk [c0, c1) of the concatenated columns: each product it overlaps gets its share. The
  // products' row counts differ (experts get different numbers of tokens), so equal column counts
  // are not equal work: the finest grain lets the pool's shared cursor balance the threads.
  pool.parallel_for(columns, kColumnGrain, [g, gemm](int64_t c0, int64_t c1) {
    int64_t first = 0;
    for (const MatmulBf16& p : *g) {
      const int64_t n0 = std::max<int64_t>(c0 - first, 0), n1 = std::min(c1 - first, p.N);
      if (n0 < n1) gemm(p.X, p.K, p.W, p.Y, p.N, p.M, n0, n1, p.K);
      first += p.N;
      if (first >= c1) return;
    }
  });
}

/* Y[M,N] = X[M,K] @ W[N,K]^T, W f32 */
void matmul_f32(ThreadPool& pool, const float* X, const float* W, float* Y, int64_t M, int64_t N,
                int64_t K) {
  const Args<float> a{X, W, Y, M, N, K};
  const auto gemm = active_kernels().gemm_f32;
  pool.parallel_for(N, column_grain(pool, M, N), [&a, gemm](int64_t n0, int64_t n1) {
    gemm(a.X, a.K, a.W, a.K, a.Y, a.N, a.M, n0, n1, a.K);
  });
}

}  // namespace scriptorium
