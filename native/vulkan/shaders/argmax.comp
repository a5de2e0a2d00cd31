#version 450
// best[r] = the index of the largest x[r, i], i < n (lowest index on ties): one workgroup per row.
// x f32 (row stride ldx); best int [rows].
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) writeonly buffer BestBuf { int best[]; };
layout(push_constant) uniform Params {
  uint n, x_off, ldx, best_off;
} p;

shared float values[256];
shared int indices[256];

void main() {
  const uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  const uint x0 = p.x_off + row * p.ldx;
  float v = -1.0 / 0.0;
  int index = -1;
  for (uint i = t; i < p.n; i += 256) {
    const float x = X[x0 + i];
    if (index < 0 || x > v) {
      v = x;
      index = int(i);
    }
  }
  values[t] = v;
  indices[t] = index;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (t < s) {
      const float ov = values[t + s];
      const int oi = indices[t + s];
      const int mi = indices[t];
      if (oi >= 0 && (mi < 0 || ov > values[t] || (ov == values[t] && oi < mi))) {
        values[t] = ov;
        indices[t] = oi;
      }
    }
    barrier();
  }
  if (t == 0) best[p.best_off + row] = max(indices[0], 0);
}
