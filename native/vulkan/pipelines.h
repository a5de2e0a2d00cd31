// Compute pipelines built from embedded SPIR-V, and command batches that record dispatches into one
// command buffer and submit them together.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "vulkan/buffers.h"
#include "vulkan/device.h"

namespace scriptorium::vk {

// One compiled shader: SPIR-V words embedded by embed-shaders.py.
struct ShaderCode {
  const char* name;
  const uint32_t* words;
  size_t bytes;
};

// A compute shader whose bindings 0..buffers-1 are storage buffers and whose parameters are one
// push-constant block of push_bytes.
class Pipeline {
 public:
  Pipeline(Device& device, const ShaderCode& code, uint32_t buffers, uint32_t push_bytes);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  const char* name() const { return name_; }
  uint32_t buffers() const { return buffers_; }
  uint32_t push_bytes() const { return push_bytes_; }

 private:
  friend class CommandBatch;
  Device& device_;
  const char* name_;
  uint32_t buffers_, push_bytes_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

// Dispatches recorded in order; each waits for the writes of the ones before it.
class CommandBatch {
 public:
  explicit CommandBatch(Device& device);
  ~CommandBatch();
  CommandBatch(const CommandBatch&) = delete;
  CommandBatch& operator=(const CommandBatch&) = delete;

  // Records pipeline over groups[3] workgroups with `buffers` bound in order and `push` as its
  // parameters (pipeline.push_bytes() bytes). Throws std::invalid_argument on a wrong buffer count,
  // a buffer larger than the device can bind, or more workgroups than it can launch.
  void dispatch(const Pipeline& pipeline, std::initializer_list<const Buffer*> buffers, const void* push,
                uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);
  // Records a copy of `bytes` from src at src_offset to dst at dst_offset (byte offsets), ordered
  // after the dispatches before it; throws std::out_of_range when a range leaves its buffer.
  void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t bytes);
  // Submits what was recorded and waits for it; the batch is then empty and ready for more.
  void run();
  // Drops what was recorded without running it (after an error part-way through recording).
  void discard();

 private:
  void begin();
  void barrier();

  static constexpr uint32_t kMaxSets = 4096, kMaxBindings = 8;  // a whole forward call of a batch of sequences
  Device& device_;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  uint32_t sets_used_ = 0;
  bool recording_ = false;
};

}  // namespace scriptorium::vk
