// Threaded matmul drivers: N is split across the pool; every chunk covers all M rows, so each
// thread streams its own columns of W once (the kernels block over M and N for cache reuse).
#include "ops.h"

#include <algorithm>

namespace scriptorium {

namespace {

constexpr int64_t kColumnGrain = 16;  // columns: whole 4- and 8-column kernel tiles
constexpr int64_t kSmallM = 16;       // up to here matmul is W-bandwidth bound (decode)

// The chunk lambda captures one pointer and one function pointer, which std::function stores
// in place: a dispatch allocates nothing.
template <typename WT>
struct Args {
  const float* X;
  const WT* W;
  float* Y;
  int64_t M, N, K;
};

// Small M: the finest grain, so the pool balances W streaming evenly across threads.
// Large M: about two chunks per thread, so each chunk amortises its pass over X.
int64_t column_grain(const ThreadPool& pool, int64_t M, int64_t N) {
  if (M <= kSmallM) return kColumnGrain;
  const int64_t chunks = 2 * static_cast<int64_t>(pool.size());
  const int64_t per_chunk = (N + chunks - 1) / chunks;
  return (per_chunk + kColumnGrain - 1) / kColumnGrain * kColumnGrain;
}

using GemmBf16 = decltype(KernelSet::gemm_bf16);

GemmBf16 gemm_for(Precision precision) {
  const KernelSet& kernels = active_kernels();
  return precision == Precision::Fast ? kernels.gemm_bf16_fast : kernels.gemm_bf16;
}

}  // namespace

/* Y[M,N] = X[M,K] @ W[N,K]^T, W bf16 */
void matmul_bf16(ThreadPool& pool, const float* X, const bf16_t* W, float* Y, int64_t M, int64_t N,
                 int64_t K, Precision precision) {
  const Args<bf16_t> a{X, W, Y, M, N, K};
  const GemmBf16 gemm = gemm_for(precision);
  pool.parallel_for(N, column_grain(pool, M, N), [&a, gemm](int64_t n0, int64_t n1) {
    gemm(a.X, a.K, a.W, a.Y, a.N, a.M, n0, n1, a.K);
  });
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
