#include "vulkan/weights.h"

#include <algorithm>

namespace scriptorium::vk {

WeightArena::WeightArena(Device& device, Transfer& transfer) : device_(device), transfer_(transfer) {}

namespace {

void require_bf16(const TensorView& tensor) {
  if (tensor.dtype != DType::BF16) throw VulkanError("the GPU backend needs BF16 weights; " + tensor.name + " is " + dtype_name(tensor.dtype));
}

}  // namespace

uint64_t WeightArena::place(uint64_t bytes, const std::string& what) {
  if (bytes > device_.max_storage_range())
    throw VulkanError(what + " (" + std::to_string(bytes) + " bytes) exceeds the largest buffer " + device_.info().name +
                      " can bind");
  const uint64_t chunk = std::min<uint64_t>(kChunkBytes, device_.max_storage_range());
  uint64_t offset = (used_ + 255) / 256 * 256;
  if (buffers_.empty() || offset + bytes > buffers_.back()->bytes()) {
    buffers_.push_back(std::make_unique<Buffer>(device_, std::max(chunk, bytes)));
    offset = 0;
  }
  used_ = offset + bytes;
  bytes_ += bytes;
  return offset;
}

Operand WeightArena::upload_bf16(const TensorView& tensor) {
  require_bf16(tensor);
  const uint64_t offset = place(tensor.nbytes, tensor.name);
  transfer_.upload(*buffers_.back(), offset, tensor.data, tensor.nbytes);
  return Operand{buffers_.back().get(), offset / 2};
}

Operand WeightArena::upload_bf16_stack(const std::vector<const TensorView*>& tensors) {
  if (tensors.empty()) throw VulkanError("upload_bf16_stack: no tensors");
  const uint64_t each = tensors[0]->nbytes;
  for (const TensorView* tensor : tensors) {
    require_bf16(*tensor);
    if (tensor->nbytes != each) throw VulkanError(tensor->name + " differs in size from " + tensors[0]->name);
  }
  const uint64_t offset = place(each * tensors.size(), tensors[0]->name + " and the " + std::to_string(tensors.size() - 1) + " tensors stacked with it");
  for (size_t i = 0; i < tensors.size(); ++i) transfer_.upload(*buffers_.back(), offset + i * each, tensors[i]->data, each);
  return Operand{buffers_.back().get(), offset / 2};
}

}  // namespace scriptorium::vk
