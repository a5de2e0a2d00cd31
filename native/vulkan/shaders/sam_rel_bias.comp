#version 450
// SAM's decomposed relative position terms, once per query instead of once per key:
//   bias[(r * heads + h) * 2S + j] = q . Rh[qy - j + S - 1]        for j < S   (key row j)
//   bias[(r * heads + h) * 2S + S + j] = q . Rw[qx - j + S - 1]    for j < S   (key column j)
// for query row r = seq * L + t of an S x S grid (L = S * S, qy = t / S, qx = t % S), head h, with
// q = qkv[q_off + r * ld + h * d ..] unscaled and Rh, Rw f32 [2S - 1, d] at rh_off, rw_off.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer QkvBuf { float X[]; };
layout(std430, binding = 1) readonly buffer RelBuf { float R[]; };
layout(std430, binding = 2) writeonly buffer OutBuf { float O[]; };
layout(push_constant) uniform Params {
  uint total, heads, d, S, ld, q_off, rh_off, rw_off, out_off;
} p;

void main() {
  const uint step = gl_NumWorkGroups.x * 64, width = 2 * p.S, L = p.S * p.S;
  for (uint e = gl_GlobalInvocationID.x; e < p.total; e += step) {
    const uint j = e % width, h = e / width % p.heads, r = e / (width * p.heads), t = r % L;
    const uint q0 = p.q_off + r * p.ld + h * p.d;
    const uint table = j < p.S ? p.rh_off + (t / p.S + p.S - 1 - j) * p.d : p.rw_off + (t % p.S + 2 * p.S - 1 - j) * p.d;
    float dot = 0.0;
    for (uint i = 0; i < p.d; ++i) dot = fma(X[q0 + i], R[table + i], dot);
    O[p.out_off + e] = dot;
  }
}
