// The vision encoders' dimensions, as read from config.json (src/engine/vision-config.ts), and the
// view sides they take: shared by the CPU encoders (cpu/cpu_vision_*.h) and the GPU ones
// (vulkan/gpu_vision_*.h).
#pragma once
#include <cstdint>
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

// Views larger than this are refused (a 256 x 256 patch grid).
constexpr int64_t kMaxViewSide = 4096;

// Throws std::invalid_argument for a view side the encoder of `dims` cannot take (on the CPU or a
// GPU): not a positive multiple of the patch up to kMaxViewSide, or for V2 a side without learned
// queries.
void check_view_side(const VisionDims& dims, int64_t side);

}  // namespace scriptorium
