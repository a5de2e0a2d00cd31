// BF16 values packed two to a 32-bit word (element i in word i / 2, low half first, as safetensors
// stores them little-endian). Include after declaring the buffer the macro names.
float bf16_at(uint word, uint index) {
  return uintBitsToFloat((index & 1u) == 0u ? word << 16 : word & 0xffff0000u);
}

// x rounded to the nearest BF16 (ties to even) as the CPU's f32_to_bf16; NaN stays NaN.
float bf16_round(float x) {
  const uint bits = floatBitsToUint(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return x;
  return uintBitsToFloat((bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u);
}
