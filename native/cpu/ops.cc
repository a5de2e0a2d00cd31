// Threaded matmul drivers: N is split across the pool; every chunk covers all M rows, so each
// thread streams its own columns of W once (the kernels block over M and N for cache reuse).
// matmul_bf16 on many rows splits M instead (see row_chunk).
#include "cpu/ops.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>

namespace scriptorium {

void advise_huge_pages(void* start, size_t bytes) {
#if defined(MADV_HUGEPAGE)
  madvise(start, bytes, MADV_HUGEPAGE);
#else
  (void)start;
  (void)bytes;
#endif
}

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

GemmBf16 packed_gemm_for(Precision precision) {
  const KernelSet& kernels = active_kernels();
  return precision == Precision::Fast ? kernels.gemm_bf16_packed_fast : kernels.gemm_bf16_packed;
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

std::shared_ptr<void> map_huge_pages(size_t bytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t mapped = bytes + kHugePage;  // a huge page to spare for the alignment
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) / kHugePage * kHugePage;
  advise_huge_pages(reinterpret_cast<void*>(start), bytes);
  return std::shared_ptr<void>(reinterpret_cast<void*>(start), [p, mapped](void*) { munmap(p, mapped); });
}

constexpr size_t kSlabBytes = size_t{64} << 20;

// The rest of the current slab, a new slab, or for weights over a quarter slab a mapping of their
// own. The returned pointer shares the slab's ownership.
std::shared_ptr<void> place_on_slabs(size_t bytes) {
  bytes = (bytes + 63) / 64 * 64;
  if (bytes > kSlabBytes / 4) return map_huge_pages(bytes);
  static std::mutex mutex;
  static std::weak_ptr<void> current;  // weak: a slab lives only as long as its weights
  static size_t used = 0;
  const std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<void> slab = current.lock();
  if (!slab || used + bytes > kSlabBytes) {
    slab = map_huge_pages(kSlabBytes);
    current = slab;
    used = 0;
  }
  void* at = static_cast<char*>(slab.get()) + used;
  used += bytes;
  return std::shared_ptr<void>(slab, at);
}

size_t PackedBf16::bytes(int64_t N, int64_t K) {
  const int64_t pairs = (K + 1) / 2, panels = (N + kPanelColumns - 1) / kPanelColumns;
  return static_cast<size_t>(panels * pairs * 2 * kPanelColumns) * sizeof(bf16_t);  // panels of 256-byte multiples
}

PackedBf16::PackedBf16(const bf16_t* W, int64_t N, int64_t K)
    : PackedBf16(W, N, K, std::static_pointer_cast<const bf16_t>(place_on_slabs(bytes(N, K)))) {}

// `storage` must read as zero: padding (an odd K's last high halves, a last panel's missing
// columns) is never written.
PackedBf16::PackedBf16(const bf16_t* W, int64_t N, int64_t K, std::shared_ptr<const bf16_t> storage) : data_(std::move(storage)) {
  const int64_t panel = (K + 1) / 2 * 2 * kPanelColumns;  // elements
  // Pairs of k move as one 32-bit word: W row n's pair q goes to word q * kPanelColumns + n % 64 of its panel.
  uint32_t* P = reinterpret_cast<uint32_t*>(const_cast<bf16_t*>(data_.get()));
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

void pack_weight(const Checkpoint& checkpoint, Bf16Weight& W, int64_t N, int64_t K) {
  if (!active_kernels().gemm_bf16_packed) return;
  pack_weight(checkpoint, W, N, K, std::static_pointer_cast<const bf16_t>(place_on_slabs(PackedBf16::bytes(N, K))));
}

void pack_weight(const Checkpoint& checkpoint, Bf16Weight& W, int64_t N, int64_t K, std::shared_ptr<const bf16_t> storage) {
  if (!active_kernels().gemm_bf16_packed) return;
  W.packed = PackedBf16(W.rows, N, K, std::move(storage));
  checkpoint.release_mapped(W.rows, static_cast<size_t>(N * K) * sizeof(bf16_t));
}

void matmul_bf16_packed(ThreadPool& pool, const float* X, const PackedBf16& W, float* Y, int64_t M, int64_t N,
                        int64_t K, Precision precision, const RowEpilogue& epilogue) {
  run_bf16(pool, {X, W.data(), Y, M, N, K, epilogue ? &epilogue : nullptr}, packed_gemm_for(precision), kPanelColumns);
}

void matmul_bf16(ThreadPool& pool, const float* X, const Bf16Weight& W, float* Y, int64_t M, int64_t N, int64_t K,
                 Precision precision, const RowEpilogue& epilogue) {
  if (W.packed.empty()) {
    matmul_bf16(pool, X, W.rows, Y, M, N, K, precision, epilogue);
  } else {
    matmul_bf16_packed(pool, X, W.packed, Y, M, N, K, precision, epilogue);
  }
}

void matmul_bf16_group(ThreadPool& pool, const std::vector<MatmulBf16>& group, Precision precision) {
  if (group.empty()) return;
  // Packed products take column ranges that start on a panel: each product's span of the
  // concatenated columns is rounded up to whole panels, and the chunks are whole panels.
  struct Dispatch {
    const std::vector<MatmulBf16>& group;
    bool packed;
    GemmBf16 gemm;
    int64_t grain;
    int64_t span(const MatmulBf16& p) const { return (p.N + grain - 1) / grain * grain; }
  };
  const bool packed = !group.front().W->packed.empty();
  const Dispatch d{group, packed, packed ? packed_gemm_for(precision) : gemm_for(precision),
                   packed ? kPanelColumns : kColumnGrain};
  int64_t columns = 0;
  for (const MatmulBf16& p : group) columns += d.span(p);
  // Chunk [c0, c1) of the concatenated columns: each product it overlaps gets its share. The
  // products' row counts differ (experts get different numbers of tokens), so equal column counts
  // are not equal work: the finest grain lets the pool's shared cursor balance the threads.
  pool.parallel_for(columns, d.grain, [&d](int64_t c0, int64_t c1) {
    int64_t first = 0;
    for (const MatmulBf16& p : d.group) {
      const int64_t n0 = std::max<int64_t>(c0 - first, 0), n1 = std::min(c1 - first, p.N);
      if (n0 < n1) d.gemm(p.X, p.K, d.packed ? p.W->packed.data() : p.W->rows, p.Y, p.N, p.M, n0, n1, p.K);
      first += d.span(p);
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
