#version 450
// KV cache rows in IEEE half: C[r, w] packs X[r, 2w] (low half) and X[r, 2w + 1] (high half, 0 past
// the row's width), so every row starts on a word. X f32 [rows, width] (row stride ldx); C uint
// [rows, (width + 1) / 2] words (row stride ldc). Rounding is to nearest even and saturates at
// +-65504, bit for bit as the CPU's to_f16 (kernels.h): the conversion is done on the bits, since
// packHalf2x16 leaves its rounding and overflow to the implementation.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) writeonly buffer CBuf { uint C[]; };
layout(push_constant) uniform Params {
  uint width, x_off, ldx, c_off, ldc;
} p;

uint half_bits(float x) {
  const uint bits = floatBitsToUint(x);
  const uint sign = (bits >> 16) & 0x8000u, a = bits & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x3ffu);  // NaN stays a (quiet) NaN
  if (a >= 0x477fe000u) return sign | 0x7bffu;                         // |x| >= 65504: the largest half
  if (a >= 0x38800000u) {                                              // a normal half: rebias, round 13 bits
    const uint r = a - 0x38000000u;
    return sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
  }
  // A subnormal half (units of 2^-24) or zero: the 24-bit significand shifted right by 126 - exponent.
  const uint e = a >> 23, shift = 126u - e;
  if (e == 0u || shift > 24u) return sign;
  const uint m = (a & 0x7fffffu) | 0x800000u;
  const uint q = m >> shift, rest = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  return sign | (q + ((rest > halfway || (rest == halfway && (q & 1u) == 1u)) ? 1u : 0u));
}

void main() {
  const uint w = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
  if (2u * w >= p.width) return;
  const uint x0 = p.x_off + r * p.ldx + 2u * w;
  const uint lo = half_bits(X[x0]), hi = 2u * w + 1u < p.width ? half_bits(X[x0 + 1u]) : 0u;
  C[p.c_off + r * p.ldc + w] = lo | (hi << 16);
}
