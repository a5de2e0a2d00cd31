// The interpolations the reference code applies to its position tables (PyTorch F.interpolate),
// run on the host by the CPU and the GPU vision encoders alike. Tables are row-major F32.
#pragma once
#include <cstdint>

#include "common/thread_pool.h"

namespace scriptorium {

// PyTorch F.interpolate(mode='bicubic', antialias=True, align_corners=False) with an output size,
// on a grid of C-vectors. Separable: along the width first, then the height; spread over `pool`.
/* Y[oh,ow,C] = resize(X[ih,iw,C]) */
void resize_bicubic_aa(ThreadPool& pool, const float* X, int64_t ih, int64_t iw, int64_t C, float* Y, int64_t oh,
                       int64_t ow);

// PyTorch F.interpolate(mode='linear', align_corners=False) along the rows of a table.
/* Y[ol,C] = resize(X[il,C]) along the first axis */
void resize_linear(const float* X, int64_t il, int64_t C, float* Y, int64_t ol);

}  // namespace scriptorium
