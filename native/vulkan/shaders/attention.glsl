// One query row and head per workgroup, online softmax over blocks of 64 keys (no score matrix):
//   out[r, h] = sum_j softmax_j(scale * q[r, h] . K[j]) V[j]   for the first visible(r) key rows j.
// q f32 [rows, heads * d] (row stride ldq); keys and values of head h for row r start at element
// rowinfo[r].x + (h / group) * d with key row stride ldk; rowinfo[r].y is the visible key count.
// d <= 256 (each of the 64 invocations owns up to 4 output dimensions). With KV_F16 defined, K and
// V hold IEEE halves packed two to a word (element i in word i / 2, low half first), widened exactly
// as they are read; offsets and strides then count halves.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer QBuf { float Q[]; };
#ifdef KV_F16
layout(std430, binding = 1) readonly buffer KBuf { uint K[]; };
layout(std430, binding = 2) readonly buffer VBuf { uint V[]; };
float key_at(uint i) { return unpackHalf2x16(K[i >> 1])[i & 1u]; }
float value_at(uint i) { return unpackHalf2x16(V[i >> 1])[i & 1u]; }
#else
layout(std430, binding = 1) readonly buffer KBuf { float K[]; };
layout(std430, binding = 2) readonly buffer VBuf { float V[]; };
float key_at(uint i) { return K[i]; }
float value_at(uint i) { return V[i]; }
#endif
layout(std430, binding = 3) writeonly buffer OutBuf { float O[]; };
layout(std430, binding = 4) readonly buffer RowBuf { ivec2 rowinfo[]; };
layout(push_constant) uniform Params {
  uint d, group, q_off, ldq, ldk, out_off, ldo, row_off;
  float scale;
} p;

const float NEG_INF = -1.0 / 0.0;
shared float qs[256];
shared float scores[64];

void main() {
  const uint h = gl_WorkGroupID.x, row = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
  const ivec2 info = rowinfo[p.row_off + row];
  const uint kv0 = uint(info.x) + (h / p.group) * p.d, n = uint(info.y);
  const uint q0 = p.q_off + row * p.ldq + h * p.d;
  for (uint i = t; i < p.d; i += 64) qs[i] = Q[q0 + i];
  barrier();
  float acc[4] = {0.0, 0.0, 0.0, 0.0};
  float mx = NEG_INF, sum = 0.0;
  for (uint j0 = 0; j0 < n; j0 += 64) {
    const uint nb = min(64u, n - j0);
    if (t < nb) {
      const uint k0 = kv0 + (j0 + t) * p.ldk;
      float dot = 0.0;
      for (uint i = 0; i < p.d; ++i) dot = fma(qs[i], key_at(k0 + i), dot);
      scores[t] = p.scale * dot;
    }
    barrier();
    float bmx = NEG_INF;
    for (uint j = 0; j < nb; ++j) bmx = max(bmx, scores[j]);
    if (bmx > mx) {
      const float c = exp(mx - bmx);
      sum *= c;
      for (uint s = 0; s < 4; ++s) acc[s] *= c;
      mx = bmx;
    }
    if (mx != NEG_INF) {
      for (uint j = 0; j < nb; ++j) {
        const float pj = exp(scores[j] - mx);
        sum += pj;
        const uint v0 = kv0 + (j0 + j) * p.ldk;
        for (uint s = 0; s < 4; ++s) {
          const uint i = t + 64 * s;
          if (i < p.d) acc[s] = fma(pj, value_at(v0 + i), acc[s]);
        }
      }
    }
    barrier();
  }
  const float inv = sum > 0.0 ? 1.0 / sum : 0.0;
  const uint o0 = p.out_off + row * p.ldo + h * p.d;
  for (uint s = 0; s < 4; ++s) {
    const uint i = t + 64 * s;
    if (i < p.d) O[o0 + i] = acc[s] * inv;
  }
}
