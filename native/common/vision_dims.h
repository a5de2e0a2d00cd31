// The vision encoders' dimensions, as read from config.json (src/engine/vision-config.ts), and the
// view sides they take: shared by the CPU encoders (cpu/cpu_vision_*.h) and the GPU ones
// (vulkan/gpu_vision_*.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace scriptorium {

// SAM ViT-B (docs/model.md §3.2, §5.1).
struct SamDims {
  int64_t width = 0, layers = 0, heads = 0;
  int64_t patch = 0;     // patch conv kernel and stride (16)
  int64_t window = 0;    // window side of the windowed blocks (14)
  int64_t mlp = 0;       // MLP hidden width (3072)
  int64_t pos_grid = 0;  // side of the stored pos_embed grid (64)
  std::vector<int64_t> global_blocks;  // blocks attending over the whole grid ({2, 5, 8, 11})
  int64_t neck = 0, net2 = 0, net3 = 0;  // output channels of the neck, net_2 and net_3
  float eps = 1e-6f;     // LayerNorm and LayerNorm2d

  void validate() const;  // throws std::invalid_argument naming the bad dimension
};

// CLIP-L/14 fed with SAM features (docs/model.md §3.3, §5.3; V1 and V3).
struct ClipDims {
  int64_t width = 0, layers = 0, heads = 0;
  int64_t mlp = 0;       // MLP hidden width (4096)
  int64_t pos_grid = 0;  // side of the stored position grid (16); the table has pos_grid^2 + 1 rows
  float eps = 1e-5f;     // every LayerNorm

  void validate() const;  // throws std::invalid_argument naming the bad dimension
};

// The Qwen2 decoder used as a vision encoder (docs/model.md §3.4, §5.4; V2).
struct Qwen2Dims {
  int64_t dim = 0, layers = 0, heads = 0, kv_heads = 0;
  int64_t mlp = 0;  // SwiGLU hidden width (4864)
  float rms_eps = 1e-6f, rope_theta = 1e6f;
  std::vector<int64_t> query_sides;  // view sides with a learned query set query_<side> ({768, 1024})

  void validate() const;  // throws std::invalid_argument naming the bad dimension
};

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

// VisionDims from the object src/engine/vision-config.ts writes, under its field names: the one
// mapping every reader of those names goes through (the addon, the device check). `o` reads one
// object: integer(key), real(key), integers(key), text(key), object(key) (a reader of the nested
// object) and fail(message), each throwing the reader's own error for a missing or wrong field.
template <typename Reader>
VisionDims vision_dims_from(const Reader& o) {
  VisionDims d;
  const std::string kind = o.text("kind");
  if (kind != "deepencoder" && kind != "deepencoderv2") o.fail("kind must be 'deepencoder' or 'deepencoderv2'");
  d.kind = kind == "deepencoder" ? VisionKind::DeepEncoder : VisionKind::DeepEncoderV2;
  const Reader s = o.object("sam");
  d.sam.width = s.integer("width");
  d.sam.layers = s.integer("layers");
  d.sam.heads = s.integer("heads");
  d.sam.patch = s.integer("patchSize");
  d.sam.window = s.integer("windowSize");
  d.sam.mlp = s.integer("mlpDim");
  d.sam.pos_grid = s.integer("posGrid");
  d.sam.global_blocks = s.integers("globalBlocks");
  d.sam.neck = s.integer("neckChannels");
  d.sam.net2 = s.integer("net2Channels");
  d.sam.net3 = s.integer("net3Channels");
  d.sam.eps = s.real("normEps");
  if (d.kind == VisionKind::DeepEncoder) {
    const Reader c = o.object("clip");
    d.clip.width = c.integer("width");
    d.clip.layers = c.integer("layers");
    d.clip.heads = c.integer("heads");
    d.clip.mlp = c.integer("mlpDim");
    d.clip.pos_grid = c.integer("posGrid");
    d.clip.eps = c.real("normEps");
  } else {
    const Reader q = o.object("qwen2");
    d.qwen2.dim = q.integer("dim");
    d.qwen2.layers = q.integer("layers");
    d.qwen2.heads = q.integer("heads");
    d.qwen2.kv_heads = q.integer("kvHeads");
    d.qwen2.mlp = q.integer("mlpDim");
    d.qwen2.rms_eps = q.real("rmsEps");
    d.qwen2.rope_theta = q.real("ropeTheta");
    d.qwen2.query_sides = q.integers("querySides");
  }
  d.projector_input = o.integer("projectorInput");
  d.embed = o.integer("embed");
  return d;
}

// Views larger than this are refused (a 256 x 256 patch grid).
constexpr int64_t kMaxViewSide = 4096;

// Throws std::invalid_argument for a view side the encoder of `dims` cannot take (on the CPU or a
// GPU): not a positive multiple of the patch up to kMaxViewSide, or for V2 a side without learned
// queries.
void check_view_side(const VisionDims& dims, int64_t side);

}  // namespace scriptorium
