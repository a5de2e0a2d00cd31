// Checkpoint weights on the device: BF16 tensors packed into a few large buffers, each read once
// from the checkpoint's memory map through the staging buffer (no host copy of the weights).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/safetensors.h"
#include "vulkan/buffers.h"
#include "vulkan/shader_ops.h"

namespace scriptorium::vk {

class WeightArena {
 public:
  WeightArena(Device& device, Transfer& transfer);

  // Uploads a BF16 tensor; the operand's offset counts BF16 elements.
  Operand upload_bf16(const TensorView& tensor);
  // Uploads BF16 tensors of one size back to back in one buffer, so that a shader indexes tensor i at
  // element offset + i * (its elements): a MoE layer's experts as one stacked [experts, N, K] tensor.
  Operand upload_bf16_stack(const std::vector<const TensorView*>& tensors);
  uint64_t bytes() const { return bytes_; }

 private:
  static constexpr uint64_t kChunkBytes = uint64_t{256} << 20;
  // A 256-byte aligned range of `bytes` in one buffer (a new one when the last is full): its byte offset.
  uint64_t place(uint64_t bytes, const std::string& what);
  Device& device_;
  Transfer& transfer_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  uint64_t used_ = 0;  // bytes used in buffers_.back()
  uint64_t bytes_ = 0;
};

}  // namespace scriptorium::vk
