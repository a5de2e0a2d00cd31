#include "vulkan/buffers.h"

#include <algorithm>
#include <cstring>

namespace scriptorium::vk {

Buffer::Buffer(Device& device, size_t bytes) : Buffer(device, bytes, false) {}

std::unique_ptr<Buffer> Buffer::host_visible(Device& device, size_t bytes) {
  return std::unique_ptr<Buffer>(new Buffer(device, bytes, true));
}

Buffer::Buffer(Device& device, size_t bytes, bool host_visible) : device_(device), bytes_((std::max<size_t>(bytes, 4) + 3) / 4 * 4) {
  const Instance& vk = device.api();
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = bytes_;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vk.vkCreateBuffer(device.handle(), &info, nullptr, &buffer_), "vkCreateBuffer");
  VkMemoryRequirements requirements;
  vk.vkGetBufferMemoryRequirements(device.handle(), buffer_, &requirements);
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = requirements.size;
  try {
    device.reserve_memory(requirements.size);
    reserved_ = requirements.size;
    alloc.memoryTypeIndex =
        host_visible ? device.memory_type(requirements.memoryTypeBits,
                                          VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                          VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
                     : device.memory_type(requirements.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    const VkResult result = vk.vkAllocateMemory(device.handle(), &alloc, nullptr, &memory_);
    if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY)
      throw DeviceMemoryError("out of device memory on " + device.info().name + ": the driver could not allocate " +
                              std::to_string(bytes_ >> 20) + " MiB");
    check(result, "vkAllocateMemory");
    check(vk.vkBindBufferMemory(device.handle(), buffer_, memory_, 0), "vkBindBufferMemory");
    if (host_visible) check(vk.vkMapMemory(device.handle(), memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
  } catch (...) {
    if (memory_) vk.vkFreeMemory(device.handle(), memory_, nullptr);
    device.release_memory(reserved_);
    vk.vkDestroyBuffer(device.handle(), buffer_, nullptr);
    throw;
  }
}

Buffer::~Buffer() {
  const Instance& vk = device_.api();
  if (mapped_) vk.vkUnmapMemory(device_.handle(), memory_);
  vk.vkDestroyBuffer(device_.handle(), buffer_, nullptr);
  vk.vkFreeMemory(device_.handle(), memory_, nullptr);
  device_.release_memory(reserved_);
}

Transfer::Transfer(Device& device) : device_(device), staging_(device, kStagingBytes, true) {
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = device.command_pool();
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  check(device.api().vkAllocateCommandBuffers(device.handle(), &info, &commands_), "vkAllocateCommandBuffers");
}

Transfer::~Transfer() {
  device_.api().vkFreeCommandBuffers(device_.handle(), device_.command_pool(), 1, &commands_);
}

void Transfer::copy(VkBuffer from, size_t from_offset, VkBuffer to, size_t to_offset, size_t bytes) {
  const Instance& vk = device_.api();
  check(vk.vkResetCommandBuffer(commands_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vk.vkBeginCommandBuffer(commands_, &begin), "vkBeginCommandBuffer");
  // Shader writes before this copy are read by it, and shader reads before it see the old bytes.
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vk.vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                          &barrier, 0, nullptr, 0, nullptr);
  VkBufferCopy region{from_offset, to_offset, bytes};
  vk.vkCmdCopyBuffer(commands_, from, to, 1, &region);
  check(vk.vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
  device_.submit_and_wait(commands_);
}

void Transfer::upload(Buffer& dst, size_t offset, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (offset > dst.bytes() || bytes > dst.bytes() - offset)
    throw std::out_of_range("upload: " + std::to_string(bytes) + " bytes at " + std::to_string(offset) +
                            " overrun a buffer of " + std::to_string(dst.bytes()));
  const auto* from = static_cast<const unsigned char*>(src);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kStagingBytes, bytes - done);
    std::memcpy(staging_.mapped_, from + done, n);
    copy(staging_.buffer_, 0, dst.buffer_, offset + done, n);
    done += n;
  }
}

void Transfer::download(const Buffer& src, size_t offset, void* dst, size_t bytes) {
  if (bytes == 0) return;
  if (offset > src.bytes() || bytes > src.bytes() - offset)
    throw std::out_of_range("download: " + std::to_string(bytes) + " bytes at " + std::to_string(offset) +
                            " overrun a buffer of " + std::to_string(src.bytes()));
  auto* to = static_cast<unsigned char*>(dst);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kStagingBytes, bytes - done);
    copy(src.buffer_, offset + done, staging_.buffer_, 0, n);
    std::memcpy(to + done, staging_.mapped_, n);
    done += n;
  }
}

}  // namespace scriptorium::vk
