#include "vulkan/pipelines.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace scriptorium::vk {

Pipeline::Pipeline(Device& device, const ShaderCode& code, uint32_t buffers, uint32_t push_bytes)
    : device_(device), name_(code.name), buffers_(buffers), push_bytes_(push_bytes) {
  const Instance& vk = device.api();
  VkDevice d = device.handle();
  VkShaderModule module = VK_NULL_HANDLE;
  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = code.bytes;
  module_info.pCode = code.words;
  check(vk.vkCreateShaderModule(d, &module_info, nullptr, &module), "vkCreateShaderModule");
  try {
    std::vector<VkDescriptorSetLayoutBinding> bindings(buffers);
    for (uint32_t i = 0; i < buffers; ++i)
      bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set_info.bindingCount = buffers;
    set_info.pBindings = bindings.data();
    check(vk.vkCreateDescriptorSetLayout(d, &set_info, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
    VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &set_layout_;
    layout_info.pushConstantRangeCount = push_bytes > 0 ? 1 : 0;
    layout_info.pPushConstantRanges = &range;
    check(vk.vkCreatePipelineLayout(d, &layout_info, nullptr, &layout_), "vkCreatePipelineLayout");
    VkComputePipelineCreateInfo pipeline_info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pipeline_info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipeline_info.stage.module = module;
    pipeline_info.stage.pName = "main";
    pipeline_info.layout = layout_;
    check(vk.vkCreateComputePipelines(d, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &pipeline_),
          (std::string("vkCreateComputePipelines(") + code.name + ")").c_str());
  } catch (...) {
    vk.vkDestroyShaderModule(d, module, nullptr);
    if (layout_) vk.vkDestroyPipelineLayout(d, layout_, nullptr);
    if (set_layout_) vk.vkDestroyDescriptorSetLayout(d, set_layout_, nullptr);
    throw;
  }
  vk.vkDestroyShaderModule(d, module, nullptr);
}

Pipeline::~Pipeline() {
  const Instance& vk = device_.api();
  vk.vkDestroyPipeline(device_.handle(), pipeline_, nullptr);
  vk.vkDestroyPipelineLayout(device_.handle(), layout_, nullptr);
  vk.vkDestroyDescriptorSetLayout(device_.handle(), set_layout_, nullptr);
}

CommandBatch::CommandBatch(Device& device) : device_(device) {
  const Instance& vk = device.api();
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kMaxSets * kMaxBindings};
  VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool_info.maxSets = kMaxSets;
  pool_info.poolSizeCount = 1;
  pool_info.pPoolSizes = &size;
  check(vk.vkCreateDescriptorPool(device.handle(), &pool_info, nullptr, &pool_), "vkCreateDescriptorPool");
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = device.command_pool();
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  const VkResult result = vk.vkAllocateCommandBuffers(device.handle(), &info, &commands_);
  if (result != VK_SUCCESS) {
    vk.vkDestroyDescriptorPool(device.handle(), pool_, nullptr);
    check(result, "vkAllocateCommandBuffers");
  }
}

CommandBatch::~CommandBatch() {
  const Instance& vk = device_.api();
  vk.vkFreeCommandBuffers(device_.handle(), device_.command_pool(), 1, &commands_);
  vk.vkDestroyDescriptorPool(device_.handle(), pool_, nullptr);
}

void CommandBatch::begin() {
  const Instance& vk = device_.api();
  check(vk.vkResetCommandBuffer(commands_, 0), "vkResetCommandBuffer");
  check(vk.vkResetDescriptorPool(device_.handle(), pool_, 0), "vkResetDescriptorPool");
  sets_used_ = 0;
  VkCommandBufferBeginInfo begin_info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin_info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vk.vkBeginCommandBuffer(commands_, &begin_info), "vkBeginCommandBuffer");
  recording_ = true;
}

void CommandBatch::dispatch(const Pipeline& pipeline, std::initializer_list<const Buffer*> buffers, const void* push,
                            uint32_t groups_x, uint32_t groups_y, uint32_t groups_z) {
  if (buffers.size() != pipeline.buffers_ || buffers.size() > kMaxBindings)
    throw std::invalid_argument(std::string(pipeline.name_) + ": expects " + std::to_string(pipeline.buffers_) +
                                " buffers, got " + std::to_string(buffers.size()));
  for (const Buffer* buffer : buffers)
    if (buffer->bytes() > device_.max_storage_range())
      throw std::invalid_argument(std::string(pipeline.name_) + ": a buffer of " + std::to_string(buffer->bytes()) +
                                  " bytes exceeds the device's storage buffer range of " +
                                  std::to_string(device_.max_storage_range()));
  if (groups_x == 0 || groups_y == 0 || groups_z == 0) return;
  if (groups_x > device_.max_workgroups_x())
    throw std::invalid_argument(std::string(pipeline.name_) + ": " + std::to_string(groups_x) +
                                " workgroups exceed the device's limit of " + std::to_string(device_.max_workgroups_x()));
  if (recording_ && sets_used_ == kMaxSets) run();
  if (!recording_) begin();
  const Instance& vk = device_.api();
  VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  alloc.descriptorPool = pool_;
  alloc.descriptorSetCount = 1;
  alloc.pSetLayouts = &pipeline.set_layout_;
  VkDescriptorSet set;
  check(vk.vkAllocateDescriptorSets(device_.handle(), &alloc, &set), "vkAllocateDescriptorSets");
  ++sets_used_;
  VkDescriptorBufferInfo infos[kMaxBindings];
  VkWriteDescriptorSet writes[kMaxBindings];
  uint32_t i = 0;
  for (const Buffer* buffer : buffers) {
    infos[i] = {buffer->handle(), 0, VK_WHOLE_SIZE};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
    ++i;
  }
  vk.vkUpdateDescriptorSets(device_.handle(), i, writes, 0, nullptr);
  barrier();
  vk.vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline_);
  vk.vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout_, 0, 1, &set, 0, nullptr);
  if (pipeline.push_bytes_ > 0)
    vk.vkCmdPushConstants(commands_, pipeline.layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, pipeline.push_bytes_, push);
  vk.vkCmdDispatch(commands_, groups_x, groups_y, groups_z);
}

// Every command reads what the previous ones wrote: a full barrier between shaders and copies.
void CommandBatch::barrier() {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                          VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  device_.api().vkCmdPipelineBarrier(commands_, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

void CommandBatch::copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t bytes) {
  if (src_offset > src.bytes() || bytes > src.bytes() - src_offset || dst_offset > dst.bytes() ||
      bytes > dst.bytes() - dst_offset)
    throw std::out_of_range("copy: " + std::to_string(bytes) + " bytes leave a buffer");
  if (bytes == 0) return;
  if (!recording_) begin();
  barrier();
  VkBufferCopy region{src_offset, dst_offset, bytes};
  device_.api().vkCmdCopyBuffer(commands_, src.handle(), dst.handle(), 1, &region);
}

void CommandBatch::discard() {
  if (!recording_) return;
  recording_ = false;
  const Instance& vk = device_.api();
  vk.vkEndCommandBuffer(commands_);
  check(vk.vkResetCommandBuffer(commands_, 0), "vkResetCommandBuffer");
}

void CommandBatch::run() {
  if (!recording_) return;
  recording_ = false;
  const Instance& vk = device_.api();
  // What the batch wrote is visible to the host once the wait returns (results copied to host-visible buffers).
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vk.vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0, nullptr);
  check(vk.vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
  device_.submit_and_wait(commands_);
}

}  // namespace scriptorium::vk
