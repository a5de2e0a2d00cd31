#version 450
// y[r, i] = (x[r, i] - mean) / sqrt(var + eps) * w[i] + b[i] per row r (biased variance, two passes
// over the row): one invocation per row, no shared memory. x, y f32 with row strides ldx, ldy (y may
// alias x); w, b f32 [n].
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer PBuf { float P[]; };
layout(std430, binding = 2) buffer YBuf { float Y[]; };
layout(push_constant) uniform Params {
  uint rows, n, x_off, ldx, w_off, b_off, y_off, ldy;
  float eps;
} p;

void main() {
  const uint row = gl_GlobalInvocationID.x;
  if (row >= p.rows) return;
  const uint x0 = p.x_off + row * p.ldx, y0 = p.y_off + row * p.ldy;
  float sum = 0.0;
  for (uint i = 0; i < p.n; ++i) sum += X[x0 + i];
  const float mean = sum / float(p.n);
  float squares = 0.0;
  for (uint i = 0; i < p.n; ++i) {
    const float d = X[x0 + i] - mean;
    squares = fma(d, d, squares);
  }
  const float r = 1.0 / sqrt(squares / float(p.n) + p.eps);
  for (uint i = 0; i < p.n; ++i) Y[y0 + i] = (X[x0 + i] - mean) * r * P[p.w_off + i] + P[p.b_off + i];
}
