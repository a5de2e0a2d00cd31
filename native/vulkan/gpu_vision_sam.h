// SAM ViT-B on the device (cpu/cpu_vision_sam.h on the CPU, docs/model.md §3.2, §5.1): patch convolution,
// absolute positions (bicubic-resized on the host once per grid side when the grid differs from the
// stored one), pre-norm blocks with windowed or global attention and decomposed relative-position
// bias, then the neck and the two stride-2 convolutions. Feature maps are channels-last.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/vision_dims.h"
#include "vulkan/gpu_vision_layers.h"

namespace scriptorium::vk {

class GpuSam {
 public:
  GpuSam(GpuVisionContext& ctx, const Checkpoint& checkpoint, const SamDims& dims);

  const SamDims& dims() const { return dims_; }
  uint32_t output_grid(uint32_t side) const { return net3_.output_size(net2_.output_size(side / dims_.patch)); }
  // The most f32 elements one view of `side` pixels needs in any one activation buffer.
  uint64_t view_floats(uint32_t side) const;

  /* features[n, h, w, net3] (channels last, h = w = output_grid(side)) = SAM(pixels[n, 3, side, side]) */
  void encode(Operand pixels, uint32_t n, uint32_t side, Operand features);

 private:
  struct Block {
    GpuLayerNorm norm1, norm2;
    GpuLinear qkv, proj, lin1, lin2;
    std::vector<float> rel_h, rel_w;  // host copies [rel_rows, head_dim], for resizing
    uint64_t rel = 0;                 // params offset of the stored rel_pos_h then rel_pos_w
    uint32_t rel_rows = 0;
    bool global = false;
    std::map<uint32_t, std::unique_ptr<Buffer>> resized;  // side -> rel_pos_h then rel_pos_w resized to 2 side - 1 rows
  };

  /* x[n, g, g, width] = x + Attn(LN1(x)); x = x + MLP(LN2(x)) */
  void run_block(Block& block, Operand x, uint32_t n, uint32_t g);
  /* out[seqs*S*S, width] = proj(attention(qkv(in))) over seqs sequences of S x S tokens */
  void attend(Block& block, Operand in, uint32_t seqs, uint32_t S, Operand out);
  /* the position table for a g x g grid, [g, g, width] */
  Operand positions(uint32_t g);

  GpuVisionContext& ctx_;
  SamDims dims_;
  GpuConv2d patch_embed_, neck0_, neck2_, net2_, net3_;
  GpuLayerNorm neck1_, neck3_;
  std::vector<float> pos_embed_;  // host copy [pos_grid, pos_grid, width], for resizing
  uint64_t pos_ = 0;              // its params offset
  std::map<uint32_t, std::unique_ptr<Buffer>> resized_positions_;
  std::vector<Block> blocks_;
  std::unique_ptr<Buffer> x_, normed_, windows_, qkv_, rel_bias_, attn_, out_, hidden_, patches_, a_, b_, c_;
};

}  // namespace scriptorium::vk
