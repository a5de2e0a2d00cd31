// Threaded drivers over the active KernelSet: each splits its work across the ThreadPool.
#pragma once
#include <cstdint>

#include "kernels.h"
#include "thread_pool.h"

namespace scriptorium {

// Y[M, N] = X[M, K] @ W[N, K]^T; X f32 (row stride K), W bf16, Y f32 (row stride N).
// Split over N in chunks sized so each thread streams its share of W once for all M rows.
void matmul_bf16(ThreadPool& pool, const float* X, const bf16_t* W, float* Y, int64_t M, int64_t N,
                 int64_t K);

// Same with F32 weights W[N, K].
void matmul_f32(ThreadPool& pool, const float* X, const float* W, float* Y, int64_t M, int64_t N,
                int64_t K);

}  // namespace scriptorium
