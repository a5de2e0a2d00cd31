#version 450
// The grouped expert products of a MoE layer: Y[i, :] = X[i, :] @ W[e]^T for the real entries i of
// each block of BLOCK entries, e = the block's expert (moe_align.comp's blocks). W holds every
// expert's [N, K] bf16 matrix back to back (expert e at element w_off + (e - first) * N * K) for the
// experts [first, first + experts) of one binding; blocks of other experts are left to the dispatches
// of their bindings. One invocation
// per output column of a block with BLOCK accumulators, so a block reads its expert's rows once;
// blocks of expert -1 exit at once and padding rows are neither computed nor written. Each output
// sums over k in ascending order with fma, as matvec_bf16.comp and matmul_bf16.comp do; round_x != 0
// (fast precision) rounds each activation once to BF16 as they do.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer WBuf { uint W[]; };
layout(std430, binding = 2) writeonly buffer YBuf { float Y[]; };
layout(std430, binding = 3) readonly buffer BlockBuf { int blocks[]; };
layout(push_constant) uniform Params {
  uint N, K, x_off, ldx, w_off, y_off, ldy, round_x, first, experts;
} p;
#include "bf16.glsl"

const uint BLOCK = 8;  // ShaderOps::kMoeBlockRows

void main() {
  const uint n = gl_GlobalInvocationID.x, block = gl_WorkGroupID.y;
  const int expert = blocks[block * 2];
  const uint real = uint(blocks[block * 2 + 1]);
  if (expert < 0 || uint(expert) < p.first || uint(expert) - p.first >= p.experts || n >= p.N) return;
  const uint w0 = p.w_off + (uint(expert) - p.first) * p.N * p.K + n * p.K;
  const uint x0 = p.x_off + block * BLOCK * p.ldx;
  float acc[BLOCK];
  for (uint t = 0; t < BLOCK; ++t) acc[t] = 0.0;
  for (uint k = 0; k < p.K; ++k) {
    const uint index = w0 + k;
    const float w = bf16_at(W[index >> 1], index);
    for (uint t = 0; t < BLOCK; ++t)
      if (t < real) {
        const float x = X[x0 + t * p.ldx + k];
        acc[t] = fma(p.round_x != 0u ? bf16_round(x) : x, w, acc[t]);
      }
  }
  for (uint t = 0; t < BLOCK; ++t)
    if (t < real) Y[p.y_off + (block * BLOCK + t) * p.ldy + n] = acc[t];
}
