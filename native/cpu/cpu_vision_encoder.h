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
#include "cpu/cpu_vision_clip.h"
#include "cpu/cpu_vision_ops.h"
#include "cpu/cpu_vision_qwen2.h"
#include "cpu/cpu_vision_sam.h"

namespace scriptorium {

enum class VisionKind { DeepEncoder, DeepEncoderV2 };

struct VisionDims {
  VisionKind kind = VisionKind::DeepEncoder;
  SamDims sam;
  ClipDims clip;    // DeepEncoder only
  Qwen2Dims qwen2;  // DeepEncoderV2 only
  int64_t projector_input = 0;  // CLIP width + net_3 channels (DeepEncoder) or the Qwen2 dim
  int64_t embed = 0;            // projector output = decoder hidden size

  void validate() const;  // throws std::invalid_argument when the components do not fit together
};

// Wall time of each stage of one encode() call, in milliseconds.
struct VisionStageTimes {
  double sam = 0;
  double encoder = 0;    // CLIP or Qwen2
  double projector = 0;  // projector input assembly and the projector
};

struct VisionOutput {
  int64_t tokens_per_view = 0;
  std::vector<float> projected;     // [n, tokens, embed]
  VisionStageTimes stage_ms;
  // Filled only when intermediates are asked for:
  std::vector<float> sam;           // [n, C, h, w] (official NCHW layout), tokens = h * w
  std::vector<int64_t> sam_shape;   // {n, C, h, w}
  std::vector<float> encoder;       // CLIP [n, tokens, width] (CLS dropped) or Qwen2 [n, tokens, dim]
};

class VisionEncoder {
 public:
  // Views larger than this are refused (a 256 x 256 patch grid).
  static constexpr int64_t kMaxSide = 4096;

  VisionEncoder(const Checkpoint& checkpoint, const VisionDims& dims, ThreadPool& pool, Precision precision);

  const VisionDims& dims() const { return dims_; }
  // Tokens one view of `side` pixels becomes; throws std::invalid_argument for a side this model
  // cannot encode (not a multiple of the patch, too large, or not a V2 query side).
  int64_t tokens_per_view(int64_t side) const;

  /* projected[n, tokens, embed] (+ intermediates) = encoder(pixels[n, 3, side, side] in [-1, 1]) */
  VisionOutput encode(const float* pixels, int64_t n, int64_t side, bool keep_intermediates) const;

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

// Throws std::invalid_argument for a view side the encoder of `dims` cannot take (on the CPU or a
// GPU): not a positive multiple of the patch up to VisionEncoder::kMaxSide, or for V2 a side without
// learned queries.
void check_view_side(const VisionDims& dims, int64_t side);

}  // namespace scriptorium
