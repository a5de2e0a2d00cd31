// Checkpoint weights on the device: BF16 tensors packed into a few large buffers, each read once
// from the checkpoint's memory map through the staging buffer (no host copy of the weights). No
// buffer is larger than the device can bind (maxStorageBufferRange): a tensor larger than that is
// stored as blocks of whole rows (the embedding, the vocabulary head) or of whole experts (a MoE
// layer's stacked experts), each in its own binding.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/safetensors.h"
#include "vulkan/buffers.h"
#include "vulkan/shader_ops.h"

namespace scriptorium::vk {

// Test-only: caps the bytes of one weight binding below the device's limit, so that the tests split
// tensors of a tiny checkpoint as a device with a small limit splits a real one. Unset in production.
inline constexpr const char* kWeightBindingCapVariable = "SCRIPTORIUM_GPU_WEIGHT_BINDING_BYTES";
// The bytes one weight binding may span: the device's limit, or cap_bytes when smaller (the value of
// kWeightBindingCapVariable, null or empty when unset); throws VulkanError on a malformed cap.
uint64_t weight_binding_bytes(uint64_t device_limit, const char* cap_bytes);

// A tensor of `rows` rows (or stacked experts) stored as blocks of block_rows whole rows, each an
// operand of its own binding; the last block may hold fewer. One block where the tensor fits.
struct RowBlocks {
  std::vector<Operand> blocks;
  int64_t rows = 0, block_rows = 0;
  int64_t first_row(size_t block) const { return static_cast<int64_t>(block) * block_rows; }
  int64_t rows_in(size_t block) const { return std::min(block_rows, rows - first_row(block)); }
};

class WeightArena {
 public:
  WeightArena(Device& device, Transfer& transfer);

  // Uploads a BF16 tensor into one binding; the operand's offset counts BF16 elements.
  Operand upload_bf16(const TensorView& tensor);
  // Uploads F32 values into one binding; the operand's offset counts F32 elements.
  Operand upload_f32(const std::vector<float>& values, const std::string& what);
  // Uploads a BF16 tensor [rows, ...] as blocks of whole rows, as many rows to a block as one binding holds.
  RowBlocks upload_bf16_rows(const TensorView& tensor);
  // Uploads BF16 tensors of one size back to back, as many to a block as one binding holds, so that a
  // shader indexes tensor i of a block at element offset + i * (its elements): a MoE layer's experts
  // as stacked [experts, N, K] tensors.
  RowBlocks upload_bf16_stack(const std::vector<const TensorView*>& tensors);
  uint64_t bytes() const { return bytes_; }
  uint64_t binding_bytes() const { return binding_bytes_; }

 private:
  static constexpr uint64_t kChunkBytes = uint64_t{256} << 20;
  // A 256-byte aligned range of `bytes` in one buffer (a new one when the last is full): its byte offset.
  uint64_t place(uint64_t bytes, const std::string& what);
  // Rows of row_bytes one binding holds (at most rows); throws when not even one fits.
  int64_t rows_per_binding(int64_t rows, uint64_t row_bytes, const std::string& what) const;
  Device& device_;
  Transfer& transfer_;
  uint64_t binding_bytes_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  uint64_t used_ = 0;  // bytes used in buffers_.back()
  uint64_t bytes_ = 0;
};

}  // namespace scriptorium::vk
