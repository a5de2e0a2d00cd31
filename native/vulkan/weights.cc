#include "weights.h"

#include <algorithm>

namespace scriptorium::vk {

WeightArena::WeightArena(Device& device, Transfer& transfer) : device_(device), transfer_(transfer) {}

Operand WeightArena::upload_bf16(const TensorView& tensor) {
  if (tensor.dtype != DType::BF16) throw VulkanError("the GPU backend needs BF16 weights; " + tensor.name + " is " + dtype_name(tensor.dtype));
  const uint64_t bytes = tensor.nbytes;
  if (bytes > device_.max_storage_range())
    throw VulkanError(tensor.name + " (" + std::to_string(bytes) + " bytes) exceeds the largest buffer " +
                      device_.info().name + " can bind");
  const uint64_t chunk = std::min<uint64_t>(kChunkBytes, device_.max_storage_range());
  uint64_t offset = (used_ + 255) / 256 * 256;
  if (buffers_.empty() || offset + bytes > buffers_.back()->bytes()) {
    buffers_.push_back(std::make_unique<Buffer>(device_, std::max(chunk, bytes)));
    offset = 0;
  }
  transfer_.upload(*buffers_.back(), offset, tensor.data, bytes);
  used_ = offset + bytes;
  bytes_ += bytes;
  return Operand{buffers_.back().get(), offset / 2};
}

}  // namespace scriptorium::vk
