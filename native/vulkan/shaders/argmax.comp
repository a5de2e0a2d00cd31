#version 450
// best[r] = the index of the largest x[r, i], i < n, among the indices row r does not ban (lowest
// index on ties; 0 when every index is banned): one workgroup per row. x f32 (row stride ldx);
// best int [rows]; bans int [rows, 2] = (offset, count) of row r's banned ids, sorted ascending, in
// banned (the no-repeat-n-gram bans).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) writeonly buffer BestBuf { int best[]; };
layout(std430, binding = 2) readonly buffer BanBuf { ivec2 bans[]; };
layout(std430, binding = 3) readonly buffer BannedBuf { int banned[]; };
layout(push_constant) uniform Params {
  uint n, x_off, ldx, best_off;
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

void main() {
  const uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  const uint x0 = p.x_off + row * p.ldx;
  const ivec2 list = bans[row];
  float v = -1.0 / 0.0;
  int index = -1;
  for (uint i = t; i < p.n; i += 256) {
    const float x = X[x0 + i];
    if ((index < 0 || x > v) && (list.y == 0 || !is_banned(list, int(i)))) {
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
