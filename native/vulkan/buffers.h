// Device buffers and the transfers between host memory and them. Uploads stream through one bounded
// staging buffer, so weights go from the checkpoint's memory map to the device without a second copy
// of them in host RAM.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "vulkan/device.h"

namespace scriptorium::vk {

class Buffer {
 public:
  // A storage buffer of `bytes` (rounded up to 4) in device-local memory, usable as a copy source
  // and destination; throws DeviceMemoryError when it does not fit the device's memory budget or
  // the driver is out of memory, VulkanError when it cannot be made otherwise.
  Buffer(Device& device, size_t bytes);
  // A buffer in host-visible, host-coherent memory (budgeted like the others) that the host reads
  // and writes through mapped(): inputs and results that a command batch copies itself.
  static std::unique_ptr<Buffer> host_visible(Device& device, size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  size_t bytes() const { return bytes_; }
  void* mapped() const { return mapped_; }  // host-visible buffers only, else null

 private:
  friend class Transfer;
  Buffer(Device& device, size_t bytes, bool host_visible);

  Device& device_;
  size_t bytes_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint64_t reserved_ = 0;  // bytes counted against the device's memory budget
  void* mapped_ = nullptr;  // host-visible buffers only
};

// Copies between host memory and device buffers through a staging buffer of kStagingBytes.
class Transfer {
 public:
  static constexpr size_t kStagingBytes = size_t{32} << 20;

  explicit Transfer(Device& device);
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // dst[offset, offset + bytes) = src[0, bytes); waits until the device holds it.
  void upload(Buffer& dst, size_t offset, const void* src, size_t bytes);
  // dst[0, bytes) = src[offset, offset + bytes).
  void download(const Buffer& src, size_t offset, void* dst, size_t bytes);

 private:
  void copy(VkBuffer from, size_t from_offset, VkBuffer to, size_t to_offset, size_t bytes);

  Device& device_;
  Buffer staging_;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
};

}  // namespace scriptorium::vk
