#version 450
// Rotate-half RoPE in place: for each row r, head h < heads and i < d/2, with (c, s) the table's
// entry for position pos[r] and pair i:
//   x'[i] = x[i] c - x[i + d/2] s;  x'[i + d/2] = x[i + d/2] c + x[i] s.
// x f32 [rows, heads * d] (row stride ldx); table f32 [positions, d/2, 2] of (cos, sin).
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer PosBuf { int pos[]; };
layout(std430, binding = 2) readonly buffer TableBuf { float table[]; };
layout(push_constant) uniform Params {
  uint rows, heads, d, x_off, ldx, pos_off;
} p;

void main() {
  const uint half_d = p.d / 2;
  const uint pair = gl_GlobalInvocationID.x, row = gl_GlobalInvocationID.y;
  if (pair >= p.heads * half_d || row >= p.rows) return;
  const uint h = pair / half_d, i = pair % half_d;
  const uint t = (uint(pos[p.pos_off + row]) * half_d + i) * 2;
  const float c = table[t], s = table[t + 1];
  const uint base = p.x_off + row * p.ldx + h * p.d;
  const float a = X[base + i], b = X[base + i + half_d];
  X[base + i] = a * c - b * s;
  X[base + i + half_d] = b * c + a * s;
}
