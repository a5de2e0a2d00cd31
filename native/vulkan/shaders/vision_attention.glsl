// Multi-head attention of the vision encoders over independent sequences of L tokens.
// Workgroup (x, head y, sequence z) takes 64 query rows, one per invocation, and walks the keys in
// blocks of 32 staged in shared memory, with an online softmax per query (no score matrix). Query
// head h reads key/value head h / group (grouped-query attention; group 1: one per head). The
// query of token row r = seq * L + t, head h, starts at element q_off + r * ld + h * d, its key and
// value at {k,v}_off + r * ld + (h / group) * d; out at out_off + r * ldo + h * d. The including
// shader defines HEAD_DIM: a fixed d (the loops unroll and q, acc stay in registers) or 0 for any
// d <= 128 (read from p.d).
// Visibility (Qwen2's causal flow in DeepSeek-OCR-2's encoder): token t < causal_from sees keys
// 0 .. causal_from - 1, token t >= causal_from sees keys 0 .. t; causal_from = L is bidirectional.
// With S > 0 (L = S * S tokens of an S x S grid) SAM's decomposed relative position bias is added to
// the scaled scores: B[row, h, ky] + B[row, h, S + kx] from sam_rel_bias.comp's [rows, heads, 2S]
// at bias_off.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer QkvBuf { float X[]; };
layout(std430, binding = 1) readonly buffer BiasBuf { float B[]; };
layout(std430, binding = 2) writeonly buffer OutBuf { float O[]; };
layout(push_constant) uniform Params {
  uint L, d, ld, q_off, k_off, v_off, out_off, ldo, S, bias_off, heads, group, causal_from;
  float scale;
} p;

#if HEAD_DIM > 0
const uint MAX_D = HEAD_DIM;
#define D HEAD_DIM
#else
const uint MAX_D = 128;
#define D p.d
#endif
const uint BLOCK = 32;  // 32 KiB of shared keys and values, the least a device must offer
const float NEG_INF = -1.0 / 0.0;
shared float ks[BLOCK][MAX_D];
shared float vs[BLOCK][MAX_D];

void main() {
  const uint t = gl_LocalInvocationID.x, h = gl_WorkGroupID.y, base = gl_WorkGroupID.z * p.L;
  const uint qt = gl_WorkGroupID.x * 64 + t;
  const bool in_range = qt < p.L;
  float q[MAX_D], acc[MAX_D];
  const uint q0 = p.q_off + (base + min(qt, p.L - 1)) * p.ld + h * D, kv0 = (h / p.group) * D;
  const uint visible = qt < p.causal_from ? p.causal_from : min(qt, p.L - 1) + 1;
  // The keys any row of this workgroup sees (its last row sees the most).
  const uint last = min(gl_WorkGroupID.x * 64 + 63, p.L - 1);
  const uint keys = last < p.causal_from ? p.causal_from : last + 1;
  for (uint i = 0; i < D; ++i) {
    q[i] = X[q0 + i];
    acc[i] = 0.0;
  }
  const uint bias0 = p.bias_off + ((base + min(qt, p.L - 1)) * p.heads + h) * 2 * p.S;
  float mx = NEG_INF, sum = 0.0;
  for (uint j0 = 0; j0 < keys; j0 += BLOCK) {
    const uint nb = min(BLOCK, keys - j0);
    for (uint e = t; e < nb * D; e += 64) {
      const uint j = e / D, i = e % D, row = (base + j0 + j) * p.ld + kv0 + i;
      ks[j][i] = X[p.k_off + row];
      vs[j][i] = X[p.v_off + row];
    }
    barrier();
    // Scores of the block first, then one rescale and the weighted values.
    float scores[BLOCK];
    float bmx = mx;
    for (uint j = 0; j < BLOCK; ++j) {
      float score = NEG_INF;
      if (j0 + j < visible) {
        float dot = 0.0;
        for (uint i = 0; i < D; ++i) dot = fma(q[i], ks[j][i], dot);
        score = p.scale * dot;
        if (p.S > 0) score += B[bias0 + (j0 + j) / p.S] + B[bias0 + p.S + (j0 + j) % p.S];
      }
      scores[j] = score;
      bmx = max(bmx, score);
    }
    const float c = exp(mx - bmx);  // 0 on the first block (mx = -inf)
    sum *= c;
    for (uint i = 0; i < D; ++i) acc[i] *= c;
    mx = bmx;
    for (uint j = 0; j < nb; ++j) {
      const float pj = exp(scores[j] - mx);
      sum += pj;
      for (uint i = 0; i < D; ++i) acc[i] = fma(pj, vs[j][i], acc[i]);
    }
    barrier();
  }
  if (!in_range) return;
  const float inv = sum > 0.0 ? 1.0 / sum : 0.0;
  const uint o0 = p.out_off + (base + qt) * p.ldo + h * D;
  for (uint i = 0; i < D; ++i) O[o0 + i] = acc[i] * inv;
}
