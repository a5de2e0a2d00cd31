// 16-bit floating-point values as bit patterns: BF16 (the checkpoints' weights) and IEEE half (the
// 16-bit KV cache), and BF16's conversions to and from F32.
#pragma once
#include <cstdint>

namespace scriptorium {

using bf16_t = uint16_t;
using f16_t = uint16_t;  // IEEE binary16 bit pattern (the 16-bit KV cache)

inline float bf16_to_f32(bf16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

// Round-to-nearest-even F32 -> BF16 (NaN kept quiet).
inline bf16_t f32_to_bf16(float f) {
  uint32_t bits;
  __builtin_memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<bf16_t>(bits >> 16);
}

}  // namespace scriptorium
