#version 450
// best[r] = the index of the largest x[r, i], i < n, among the indices row r does not ban (lowest
// index on ties; 0 when every index is banned), and logprob[r] = the log-softmax of row r over
// every index, banned ones included, at best[r]: one workgroup per row. Each invocation keeps a
// running maximum and sum of exp(x - maximum) over its indices, rescaled when the maximum grows,
// and the workgroup merges them as it merges the argmax. x f32 (row stride ldx); best int [rows];
// logprob f32 [rows]; bans int [rows, 2] = (offset, count) of row r's banned ids, sorted ascending,
// in banned (the no-repeat-n-gram bans).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) writeonly buffer BestBuf { int best[]; };
layout(std430, binding = 2) readonly buffer BanBuf { ivec2 bans[]; };
layout(std430, binding = 3) readonly buffer BannedBuf { int banned[]; };
layout(std430, binding = 4) writeonly buffer LogprobBuf { float logprob[]; };
layout(push_constant) uniform Params {
  uint n, x_off, ldx, best_off, logprob_off;
} p;

bool is_banned(ivec2 list, int id) {
  int lo = list.x, hi = list.x + list.y;  // binary search in banned[lo, hi)
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (banned[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < list.x + list.y && banned[lo] == id;
}

shared float values[256];
shared int indices[256];
shared float maxima[256];
shared float sums[256];  // 0: the invocation saw no index

void main() {
  const uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  const uint x0 = p.x_off + row * p.ldx;
  const ivec2 list = bans[row];
  float v = -1.0 / 0.0;
  int index = -1;
  float m = 0.0, s = 0.0;
  for (uint i = t; i < p.n; i += 256) {
    const float x = X[x0 + i];
    if (s == 0.0) {
      m = x;
      s = 1.0;
    } else if (x > m) {
      s = s * exp(m - x) + 1.0;
      m = x;
    } else {
      s += exp(x - m);
    }
    if ((index < 0 || x > v) && (list.y == 0 || !is_banned(list, int(i)))) {
      v = x;
      index = int(i);
    }
  }
  values[t] = v;
  indices[t] = index;
  maxima[t] = m;
  sums[t] = s;
  barrier();
  for (uint h = 128; h > 0; h >>= 1) {
    if (t < h) {
      const float ov = values[t + h];
      const int oi = indices[t + h];
      const int mi = indices[t];
      if (oi >= 0 && (mi < 0 || ov > values[t] || (ov == values[t] && oi < mi))) {
        values[t] = ov;
        indices[t] = oi;
      }
      const float om = maxima[t + h], os = sums[t + h];
      if (os > 0.0) {
        if (sums[t] == 0.0) {
          maxima[t] = om;
          sums[t] = os;
        } else {
          const float mm = max(maxima[t], om);
          sums[t] = sums[t] * exp(maxima[t] - mm) + os * exp(om - mm);
          maxima[t] = mm;
        }
      }
    }
    barrier();
  }
  if (t == 0) {
    const int pick = max(indices[0], 0);
    best[p.best_off + row] = pick;
    logprob[p.logprob_off + row] = X[x0 + uint(pick)] - (maxima[0] + log(sums[0]));
  }
}
