#include "vulkan/weights.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace scriptorium::vk {

uint64_t weight_binding_bytes(uint64_t device_limit, const char* cap_bytes) {
  if (cap_bytes == nullptr || *cap_bytes == '\0') return device_limit;
  char* end = nullptr;
  errno = 0;
  const unsigned long long cap = std::strtoull(cap_bytes, &end, 10);
  if (*end != '\0' || errno != 0 || cap == 0 || !std::isdigit(static_cast<unsigned char>(*cap_bytes)))
    throw VulkanError(std::string(kWeightBindingCapVariable) + " must be a positive number of bytes (got \"" + cap_bytes + "\")");
  return std::min<uint64_t>(device_limit, cap);
}

WeightArena::WeightArena(Device& device, Transfer& transfer)
    : device_(device),
      transfer_(transfer),
      binding_bytes_(weight_binding_bytes(device.max_storage_range(), std::getenv(kWeightBindingCapVariable))) {}

namespace {

void require_bf16(const TensorView& tensor) {
  if (tensor.dtype != DType::BF16) throw VulkanError("the GPU backend needs BF16 weights; " + tensor.name + " is " + dtype_name(tensor.dtype));
}

}  // namespace

uint64_t WeightArena::place(uint64_t bytes, const std::string& what) {
  if (bytes > binding_bytes_)
    throw VulkanError(what + " (" + std::to_string(bytes) + " bytes) exceeds the largest buffer " + device_.info().name +
                      " can bind (" + std::to_string(binding_bytes_) + " bytes)");
  const uint64_t chunk = std::min<uint64_t>(kChunkBytes, binding_bytes_);
  uint64_t offset = (used_ + 255) / 256 * 256;
  if (buffers_.empty() || offset + bytes > buffers_.back()->bytes()) {
    buffers_.push_back(std::make_unique<Buffer>(device_, std::max(chunk, bytes)));
    offset = 0;
  }
  used_ = offset + bytes;
  bytes_ += bytes;
  return offset;
}

int64_t WeightArena::rows_per_binding(int64_t rows, uint64_t row_bytes, const std::string& what) const {
  const uint64_t fit = binding_bytes_ / row_bytes;
  if (fit == 0)
    throw VulkanError("one row of " + what + " (" + std::to_string(row_bytes) + " bytes) exceeds the largest buffer " +
                      device_.info().name + " can bind (" + std::to_string(binding_bytes_) + " bytes)");
  return static_cast<int64_t>(std::min<uint64_t>(fit, static_cast<uint64_t>(rows)));
}

Operand WeightArena::upload_bf16(const TensorView& tensor) {
  require_bf16(tensor);
  const uint64_t offset = place(tensor.nbytes, tensor.name);
  transfer_.upload(*buffers_.back(), offset, tensor.data, tensor.nbytes);
  return Operand{buffers_.back().get(), offset / 2};
}

Operand WeightArena::upload_f32(const std::vector<float>& values, const std::string& what) {
  const uint64_t bytes = values.size() * sizeof(float);
  const uint64_t offset = place(bytes, what);
  transfer_.upload(*buffers_.back(), offset, values.data(), bytes);
  return Operand{buffers_.back().get(), offset / 4};
}

RowBlocks WeightArena::upload_bf16_rows(const TensorView& tensor) {
  require_bf16(tensor);
  if (tensor.shape.empty() || tensor.shape[0] <= 0) throw VulkanError(tensor.name + " has no rows");
  RowBlocks out;
  out.rows = tensor.shape[0];
  const uint64_t row_bytes = tensor.nbytes / static_cast<uint64_t>(out.rows);
  out.block_rows = rows_per_binding(out.rows, row_bytes, tensor.name);
  const auto* data = static_cast<const unsigned char*>(tensor.data);
  for (int64_t first = 0; first < out.rows; first += out.block_rows) {
    const uint64_t bytes = static_cast<uint64_t>(std::min(out.block_rows, out.rows - first)) * row_bytes;
    const uint64_t offset = place(bytes, tensor.name);
    transfer_.upload(*buffers_.back(), offset, data + static_cast<uint64_t>(first) * row_bytes, bytes);
    out.blocks.push_back(Operand{buffers_.back().get(), offset / 2});
  }
  return out;
}

RowBlocks WeightArena::upload_bf16_stack(const std::vector<const TensorView*>& tensors) {
  if (tensors.empty()) throw VulkanError("upload_bf16_stack: no tensors");
  const uint64_t each = tensors[0]->nbytes;
  for (const TensorView* tensor : tensors) {
    require_bf16(*tensor);
    if (tensor->nbytes != each) throw VulkanError(tensor->name + " differs in size from " + tensors[0]->name);
  }
  RowBlocks out;
  out.rows = static_cast<int64_t>(tensors.size());
  out.block_rows = rows_per_binding(out.rows, each, tensors[0]->name);
  for (int64_t first = 0; first < out.rows; first += out.block_rows) {
    const int64_t count = std::min(out.block_rows, out.rows - first);
    const uint64_t offset =
        place(each * count, tensors[first]->name + " and the " + std::to_string(count - 1) + " tensors stacked with it");
    for (int64_t i = 0; i < count; ++i) transfer_.upload(*buffers_.back(), offset + i * each, tensors[first + i]->data, each);
    out.blocks.push_back(Operand{buffers_.back().get(), offset / 2});
  }
  return out;
}

}  // namespace scriptorium::vk
