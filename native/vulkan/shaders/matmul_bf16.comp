#version 450
// Y[M, N] = X[M, K] @ W[N, K]^T: X f32 (row stride ldx), W bf16 (row stride K), Y f32 (row stride
// ldy); every operand starts at an element offset. Portable path: 32x32 output tiles per workgroup,
// K walked in steps of 16 through shared memory, each of the 16x16 invocations owning a 2x2 block.
// round_x != 0 (fast precision): each activation is rounded once to BF16, so that every product is
// BF16 x BF16, exact in F32, as the CPU's gemm_bf16_fast computes it.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer WBuf { uint W[]; };
layout(std430, binding = 2) writeonly buffer YBuf { float Y[]; };
layout(push_constant) uniform Params {
  uint M, N, K, x_off, ldx, w_off, y_off, ldy, round_x;
} p;
#include "bf16.glsl"

const uint BM = 32, BN = 32, BK = 16;
shared float xs[BK][BM + 1];
shared float ws[BK][BN + 1];

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint tid = ty * 16 + tx;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  float acc[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
  for (uint k0 = 0; k0 < p.K; k0 += BK) {
    // 512 elements of each tile, two per invocation: row r of the tile, column c of the K step.
    for (uint e = tid; e < BM * BK; e += 256) {
      const uint r = e / BK, c = e % BK;
      const uint m = m0 + r, n = n0 + r, k = k0 + c;
      const float x = (m < p.M && k < p.K) ? X[p.x_off + m * p.ldx + k] : 0.0;
      xs[c][r] = p.round_x != 0u ? bf16_round(x) : x;
      if (n < p.N && k < p.K) {
        const uint index = p.w_off + n * p.K + k;
        ws[c][r] = bf16_at(W[index >> 1], index);
      } else {
        ws[c][r] = 0.0;
      }
    }
    barrier();
    for (uint c = 0; c < BK; ++c) {
      const float x0 = xs[c][ty * 2], x1 = xs[c][ty * 2 + 1];
      const float w0 = ws[c][tx * 2], w1 = ws[c][tx * 2 + 1];
      acc[0][0] = fma(x0, w0, acc[0][0]);
      acc[0][1] = fma(x0, w1, acc[0][1]);
      acc[1][0] = fma(x1, w0, acc[1][0]);
      acc[1][1] = fma(x1, w1, acc[1][1]);
    }
    barrier();
  }
  for (uint i = 0; i < 2; ++i)
    for (uint j = 0; j < 2; ++j) {
      const uint m = m0 + ty * 2 + i, n = n0 + tx * 2 + j;
      if (m < p.M && n < p.N) Y[p.y_off + m * p.ldy + n] = acc[i][j];
    }
}
