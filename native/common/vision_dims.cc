#include "common/vision_dims.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace scriptorium {

void SamDims::validate() const {
  const std::pair<int64_t, const char*> sizes[] = {
      {width, "width"}, {layers, "layers"}, {heads, "heads"}, {patch, "patch_size"}, {window, "window_size"},
      {mlp, "mlp_dim"}, {pos_grid, "image_size / patch_size"}, {neck, "neck_channels"},
      {net2, "downsample_channels[0]"}, {net3, "net_3 channels"}};
  for (const auto& [value, name] : sizes)
    if (value <= 0) throw std::invalid_argument(std::string("vision dims: sam ") + name + " must be positive");
  if (width % heads != 0) throw std::invalid_argument("vision dims: sam width must be a multiple of heads");
  for (int64_t b : global_blocks)
    if (b < 0 || b >= layers) throw std::invalid_argument("vision dims: sam global_attn_indexes must lie within its layers");
}

void ClipDims::validate() const {
  const std::pair<int64_t, const char*> sizes[] = {
      {width, "width"}, {layers, "layers"}, {heads, "heads"}, {mlp, "mlp_dim"}, {pos_grid, "image_size / patch_size"}};
  for (const auto& [value, name] : sizes)
    if (value <= 0) throw std::invalid_argument(std::string("vision dims: clip ") + name + " must be positive");
  if (width % heads != 0) throw std::invalid_argument("vision dims: clip width must be a multiple of heads");
}

void Qwen2Dims::validate() const {
  const std::pair<int64_t, const char*> sizes[] = {
      {dim, "dim"}, {layers, "layers"}, {heads, "heads"}, {kv_heads, "kv_heads"}, {mlp, "mlp_dim"}};
  for (const auto& [value, name] : sizes)
    if (value <= 0) throw std::invalid_argument(std::string("vision dims: qwen2 ") + name + " must be positive");
  if (dim % heads != 0 || heads % kv_heads != 0)
    throw std::invalid_argument("vision dims: qwen2 dim must be a multiple of heads, heads a multiple of kv_heads");
  if ((dim / heads) % 2 != 0) throw std::invalid_argument("vision dims: qwen2 head dim must be even for rotary embeddings");
  if (query_sides.empty()) throw std::invalid_argument("vision dims: qwen2 needs at least one query side");
}

void VisionDims::validate() const {
  sam.validate();
  if (embed <= 0) throw std::invalid_argument("vision dims: projector n_embed must be positive");
  if (kind == VisionKind::DeepEncoder) {
    clip.validate();
    if (sam.net3 != clip.width)
      throw std::invalid_argument("vision dims: SAM net_3 channels must equal the CLIP width (SAM features are its patch embeddings)");
    if (projector_input != clip.width + sam.net3)
      throw std::invalid_argument("vision dims: projector input_dim must be CLIP width + net_3 channels");
  } else {
    qwen2.validate();
    if (sam.net3 != qwen2.dim) throw std::invalid_argument("vision dims: SAM net_3 channels must equal the Qwen2 dim");
    if (projector_input != qwen2.dim) throw std::invalid_argument("vision dims: projector input_dim must equal the Qwen2 dim");
  }
}

void check_view_side(const VisionDims& dims, int64_t side) {
  const int64_t patch = dims.sam.patch;
  if (side <= 0 || side % patch != 0 || side > kMaxViewSide)
    throw std::invalid_argument("vision encoder: the view side must be a positive multiple of " + std::to_string(patch) +
                                " pixels up to " + std::to_string(kMaxViewSide) + ", got " + std::to_string(side));
  if (dims.kind == VisionKind::DeepEncoderV2) {
    const std::vector<int64_t>& sides = dims.qwen2.query_sides;
    if (std::find(sides.begin(), sides.end(), side) == sides.end()) {
      std::string list;
      for (int64_t s : sides) list += (list.empty() ? "" : " or ") + std::to_string(s);
      throw std::invalid_argument("vision encoder: DeepSeek-OCR-2 encodes only " + list +
                                  "-pixel views (it has learned queries for those), got " + std::to_string(side));
    }
  }
}

}  // namespace scriptorium
