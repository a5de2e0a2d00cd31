// SAM ViT-B image encoder (docs/model.md §3.2, §5.1), shared by all variants: 16-px patch conv,
// absolute position embedding (resized when the grid differs from the stored one), pre-norm
// blocks with windowed or global attention and decomposed relative-position bias, then the neck
// and two stride-2 convolutions (net_2, net_3). Feature maps are held channels-last.
#pragma once
#include <cstdint>
#include <vector>

#include "common/safetensors.h"
#include "common/vision_dims.h"
#include "common/thread_pool.h"
#include "cpu/cpu_vision_ops.h"

namespace scriptorium {

class SamEncoder {
 public:
  SamEncoder(const Checkpoint& checkpoint, const SamDims& dims, ThreadPool& pool, Precision precision);

  const SamDims& dims() const { return dims_; }
  // Side of the output grid for views of `side` pixels: side / patch, then halved twice (rounding up).
  int64_t output_grid(int64_t side) const;

  /* features[n, h, w, net3] (channels last, h = w = output_grid(side)) = SAM(pixels[n, 3, side, side]) */
  void encode(const float* pixels, int64_t n, int64_t side, std::vector<float>& features, const BetweenLayers& between_layers) const;

 private:
  struct Block {
    LayerNorm norm1, norm2;
    Linear qkv, proj, lin1, lin2;
    std::vector<float> rel_h, rel_w;  // [rel_rows, head_dim]
    int64_t rel_rows = 0;
    bool global = false;
  };

  // Activations of one encode() call, allocated once and reused by every block.
  struct Scratch {
    LargeBuffer<float> normed, qkv, attn, hidden;
    LargeBuffer<float> windows, windowed_attn;  // windowed blocks: qkv and attention per window row
  };

  /* x[n, g, g, width] = x + Attn(LN1(x)); x = x + MLP(LN2(x)). scratch.normed holds LN1(x) on entry
     and next_norm(x) on return (when not null): each norm is applied by the product before it. */
  void run_block(const Block& block, const LayerNorm* next_norm, LargeBuffer<float>& x, int64_t n, int64_t g,
                 Scratch& scratch) const;
  /* out[seqs*S*S, width] = softmax(q.k^T + rel-pos bias) v of qkv[seqs*S*S, 3*width], per S x S square and head */
  void attend(const Block& block, const float* qkv, int64_t seqs, int64_t S, float* out) const;
  SamDims dims_;
  ThreadPool& pool_;
  Precision precision_;
  Conv2d patch_embed_;
  std::vector<float> pos_embed_;  // [pos_grid, pos_grid, width]
  std::vector<Block> blocks_;
  Conv2d neck0_, neck2_, net2_, net3_;
  LayerNorm neck1_, neck3_;
};

}  // namespace scriptorium
