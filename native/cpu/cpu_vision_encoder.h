// The vision half of a checkpoint (docs/model.md §5): SAM followed by CLIP (deepencoder: V1, V3) or by
// the Qwen2 encoder (deepencoderv2: V2), then the linear projector into the decoder's embedding
// space. All views of one call share one side and go through every layer together. Also holds the
// assembly vectors image_newline (absent in V2) and view_seperator (§3.5, §5.6).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/safetensors.h"
#include "common/thread_pool.h"
#include "common/vision_dims.h"
#include "common/vision_output.h"
#include "cpu/cpu_vision_clip.h"
#include "cpu/cpu_vision_ops.h"
#include "cpu/cpu_vision_qwen2.h"
#include "cpu/cpu_vision_sam.h"

namespace scriptorium {

class VisionEncoder {
 public:
  VisionEncoder(const Checkpoint& checkpoint, const VisionDims& dims, ThreadPool& pool, Precision precision);

  const VisionDims& dims() const { return dims_; }
  // Tokens one view of `side` pixels becomes; throws std::invalid_argument for a side this model
  // cannot encode (not a multiple of the patch, too large, or not a V2 query side).
  int64_t tokens_per_view(int64_t side) const;

  /* projected[n, tokens, embed] (+ intermediates) = encoder(pixels[n, 3, side, side] in [-1, 1]);
     between_layers runs after every SAM block and every CLIP / Qwen2 layer */
  VisionOutput encode(const float* pixels, int64_t n, int64_t side, bool keep_intermediates,
                      const BetweenLayers& between_layers) const;

  const std::vector<float>& image_newline() const { return image_newline_; }    // [embed]; empty for V2
  const std::vector<float>& view_separator() const { return view_separator_; }  // [embed]

 private:
  VisionDims dims_;
  ThreadPool& pool_;
  Precision precision_;
  SamEncoder sam_;
  std::unique_ptr<ClipEncoder> clip_;
  std::unique_ptr<Qwen2Encoder> qwen2_;
  Linear projector_;
  std::vector<float> image_newline_, view_separator_;
};

}  // namespace scriptorium
