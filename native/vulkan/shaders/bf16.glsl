// BF16 values packed two to a 32-bit word (element i in word i / 2, low half first, as safetensors
// stores them little-endian). Include after declaring the buffer the macro names.
float bf16_at(uint word, uint index) {
  return uintBitsToFloat((index & 1u) == 0u ? word << 16 : word & 0xffff0000u);
}
