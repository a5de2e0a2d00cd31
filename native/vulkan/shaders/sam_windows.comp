#version 450
// SAM's windowed attention layout: views of a g x g grid of C-vectors, zero-padded at the bottom and
// right to per * S, split into per x per windows of S x S tokens (row-major per view). Window row of
// grid pixel (v, y, x): ((v * per + y / S) * per + x / S) * S * S + (y % S) * S + x % S.
//   merge 0 (partition): windows[row, c] = grid[(v, y, x), c], zero for padding;   n = window elements
//   merge 1:             grid[(v, y, x), c] += windows[row of (v, y, x), c];        n = grid elements
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer GridBuf { float G[]; };
layout(std430, binding = 1) buffer WinBuf { float Wn[]; };
layout(push_constant) uniform Params {
  uint n, C, g, S, per, merge;
} p;

void main() {
  const uint step = gl_NumWorkGroups.x * 256, tokens = p.S * p.S;
  for (uint e = gl_GlobalInvocationID.x; e < p.n; e += step) {
    const uint c = e % p.C, row = e / p.C;
    if (p.merge == 0u) {
      const uint window = row / tokens, t = row % tokens;
      const uint v = window / (p.per * p.per), wy = window / p.per % p.per, wx = window % p.per;
      const uint y = wy * p.S + t / p.S, x = wx * p.S + t % p.S;
      Wn[e] = (y < p.g && x < p.g) ? G[((v * p.g + y) * p.g + x) * p.C + c] : 0.0;
    } else {
      const uint v = row / (p.g * p.g), y = row / p.g % p.g, x = row % p.g;
      const uint wrow = ((v * p.per + y / p.S) * p.per + x / p.S) * tokens + (y % p.S) * p.S + x % p.S;
      G[e] += Wn[wrow * p.C + c];
    }
  }
}
