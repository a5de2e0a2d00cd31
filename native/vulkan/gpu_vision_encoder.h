// The vision half of a checkpoint on a Vulkan device (cpu/cpu_vision_encoder.h on the CPU, docs/model.md §5):
// SAM, then CLIP (DeepEncoder: V1, V3) or the Qwen2 encoder (DeepEncoderV2: V2), then the projector;
// exact mode (F32 activations, BF16 weights uploaded once). Views go through every layer together, in
// as few passes as the device's largest bindable buffer allows; only the pixels go up and the
// projected rows (and intermediates when asked) come back.
#pragma once
#include <cstdint>
#include <memory>

#include "common/vision_dims.h"
#include "common/vision_output.h"
#include "vulkan/gpu_vision_clip.h"
#include "vulkan/gpu_vision_layers.h"
#include "vulkan/gpu_vision_qwen2.h"
#include "vulkan/gpu_vision_sam.h"

namespace scriptorium::vk {

class GpuVisionEncoder {
 public:
  // Throws std::invalid_argument for dims that do not fit together. matmul_path, precision: as
  // GpuDecoder's (every product of SAM, CLIP or Qwen2 and the projector follows the precision, as on the CPU).
  GpuVisionEncoder(Device& device, const Checkpoint& checkpoint, const VisionDims& dims, const std::string& matmul_path,
                   Precision precision);

  uint64_t weight_bytes() const { return ctx_.weights.bytes(); }

  /* projected[n, tokens, embed] (+ intermediates) = encoder(pixels[n, 3, side, side] in [-1, 1]);
     the same contract and errors as VisionEncoder::encode */
  VisionOutput encode(const float* pixels, int64_t n, int64_t side, bool keep_intermediates);

 private:
  // Width of the encoder's output rows: CLIP's or the Qwen2 dim.
  uint32_t encoder_width() const;
  /* one pass over views [v0, v0 + m) of the call, written into out */
  void encode_views(const float* pixels, uint32_t v0, uint32_t m, uint32_t side, bool keep, VisionOutput& out);

  VisionDims dims_;
  GpuVisionContext ctx_;
  std::unique_ptr<GpuSam> sam_;
  std::unique_ptr<GpuClip> clip_;    // DeepEncoder
  std::unique_ptr<GpuQwen2> qwen2_;  // DeepEncoderV2
  GpuLinear projector_;
  std::unique_ptr<Buffer> pixels_, sam_out_, features_, projected_;
};

}  // namespace scriptorium::vk
