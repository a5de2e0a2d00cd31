// CLIP-L/14 on the device fed with SAM features (cpu/cpu_vision_clip.h on the CPU, docs/model.md §3.3, §5.3):
// a CLS row prepended, position embeddings added (bicubic-resized on the host once per grid side
// when the token grid differs from the stored one), pre-LayerNorm, pre-norm blocks with bidirectional
// attention and quick-GELU MLPs. CLS is dropped from the output.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/vision_dims.h"
#include "vulkan/gpu_vision_layers.h"

namespace scriptorium::vk {

class GpuClip {
 public:
  GpuClip(GpuVisionContext& ctx, const Checkpoint& checkpoint, const ClipDims& dims);

  // The most f32 elements one view of `tokens` tokens needs in any one activation buffer.
  uint64_t view_floats(uint32_t tokens) const;

  /* out[n, tokens, width] (row stride ldo) = CLIP(patches[n, tokens, width]) without CLS; tokens a square */
  void encode(Operand patches, uint32_t n, uint32_t tokens, Operand out, uint32_t ldo);

 private:
  struct Layer {
    GpuLayerNorm norm1, norm2;
    GpuLinear qkv, out_proj, fc1, fc2;
  };

  /* the position rows for CLS + a grid x grid token grid, [grid^2 + 1, width] */
  Operand positions(uint32_t grid);

  GpuVisionContext& ctx_;
  ClipDims dims_;
  uint64_t class_embedding_ = 0;  // params offset [width]
  std::vector<float> positions_;  // host copy [pos_grid^2 + 1, width], for resizing
  uint64_t positions_offset_ = 0;
  std::map<uint32_t, std::unique_ptr<Buffer>> resized_positions_;
  GpuLayerNorm pre_norm_;
  std::vector<Layer> layers_;
  std::unique_ptr<Buffer> x_, normed_, qkv_, attn_, hidden_;
};

}  // namespace scriptorium::vk
