#version 450
// Y[M, N] = X[M, K] @ W[N, K]^T with F32 weights and activations: one invocation per output element,
// a plain dot product in k order. For the MoE router, which the CPU decoder also computes in F32 from
// the checkpoint's values, so that a router stored in F32 selects the same experts on both.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer WBuf { float W[]; };
layout(std430, binding = 2) writeonly buffer YBuf { float Y[]; };
layout(push_constant) uniform Params {
  uint M, N, K, x_off, ldx, w_off, y_off, ldy;
} p;

void main() {
  const uint n = gl_GlobalInvocationID.x, m = gl_GlobalInvocationID.y;
  if (n >= p.N || m >= p.M) return;
  const uint w0 = p.w_off + n * p.K, x0 = p.x_off + m * p.ldx;
  float acc = 0.0;
  for (uint k = 0; k < p.K; ++k) acc = fma(X[x0 + k], W[w0 + k], acc);
  Y[p.y_off + m * p.ldy + n] = acc;
}
