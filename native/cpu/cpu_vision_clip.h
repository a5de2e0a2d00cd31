// CLIP-L/14 vision transformer fed with SAM features (docs/model.md §3.3, §5.3; V1 and V3): the SAM
// output replaces the patch convolution, a CLS row is prepended, position embeddings are added
// (the stored 16x16 grid resized when the token grid differs), pre-LayerNorm, then pre-norm
// blocks with bidirectional attention and quick-GELU MLPs. No final LayerNorm; CLS is dropped.
#pragma once
#include <cstdint>
#include <vector>

#include "common/safetensors.h"
#include "common/vision_dims.h"
#include "common/thread_pool.h"
#include "cpu/cpu_vision_ops.h"

namespace scriptorium {

class ClipEncoder {
 public:
  ClipEncoder(const Checkpoint& checkpoint, const ClipDims& dims, ThreadPool& pool, Precision precision);

  const ClipDims& dims() const { return dims_; }

  /* out[n, tokens, width] = CLIP(patches[n, tokens, width]) without the CLS row; tokens a square */
  void encode(const float* patches, int64_t n, int64_t tokens, float* out, const BetweenLayers& between_layers) const;

 private:
  struct Layer {
    LayerNorm norm1, norm2;
    Linear qkv, out_proj, fc1, fc2;
  };

  ClipDims dims_;
  ThreadPool& pool_;
  Precision precision_;
  std::vector<float> class_embedding_;  // [width]
  std::vector<float> positions_;        // [pos_grid^2 + 1, width], row 0 for CLS
  LayerNorm pre_norm_;
  std::vector<Layer> layers_;
};

}  // namespace scriptorium
