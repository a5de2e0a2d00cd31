#version 450
// Convolution patches: out[r, (c * k + ky) * k + kx] = x(b, c, oy * stride - pad + ky, ox * stride - pad + kx)
// for output pixel r = (b * Ho + oy) * Wo + ox, zero outside the H x W input. Element (b, c, y, x) of
// the input lives at x_off + b * sb + c * sc + y * sy + x * sx (NCHW or channels-last alike).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) writeonly buffer OutBuf { float O[]; };
layout(push_constant) uniform Params {
  uint total, channels, k, stride, pad, H, W, Ho, Wo, x_off, sb, sc, sy, sx;
} p;

void main() {
  const uint cols = p.channels * p.k * p.k, step = gl_NumWorkGroups.x * 256;
  for (uint e = gl_GlobalInvocationID.x; e < p.total; e += step) {
    const uint r = e / cols, col = e % cols;
    const uint c = col / (p.k * p.k), ky = col / p.k % p.k, kx = col % p.k;
    const uint b = r / (p.Ho * p.Wo), oy = r / p.Wo % p.Ho, ox = r % p.Wo;
    const int y = int(oy * p.stride + ky) - int(p.pad), x = int(ox * p.stride + kx) - int(p.pad);
    const bool inside = y >= 0 && y < int(p.H) && x >= 0 && x < int(p.W);
    O[e] = inside ? X[p.x_off + b * p.sb + c * p.sc + uint(y) * p.sy + uint(x) * p.sx] : 0.0;
  }
}
