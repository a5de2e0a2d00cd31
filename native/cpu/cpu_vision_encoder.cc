#include "cpu/cpu_vision_encoder.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace scriptorium {

namespace {

/* the dims, validated (members are built from them) */
const VisionDims& validated(const VisionDims& dims) {
  dims.validate();
  return dims;
}

using Clock = std::chrono::steady_clock;

/* milliseconds from `start` to now; `start` moves to now */
double lap_ms(Clock::time_point& start) {
  const Clock::time_point now = Clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - start).count();
  start = now;
  return ms;
}

}  // namespace

VisionEncoder::VisionEncoder(const Checkpoint& checkpoint, const VisionDims& dims, ThreadPool& pool, Precision precision)
    : dims_(validated(dims)), pool_(pool), precision_(precision), sam_(checkpoint, dims.sam, pool, precision) {
  if (dims_.kind == VisionKind::DeepEncoder) {
    clip_ = std::make_unique<ClipEncoder>(checkpoint, dims_.clip, pool, precision);
  } else {
    std::vector<int64_t> query_tokens;
    for (int64_t side : dims_.qwen2.query_sides) {
      if (side <= 0 || side % dims_.sam.patch != 0)
        throw std::invalid_argument("vision dims: qwen2 query side " + std::to_string(side) +
                                    " is not a multiple of the SAM patch");
      const int64_t grid = sam_.output_grid(side);
      query_tokens.push_back(grid * grid);
    }
    qwen2_ = std::make_unique<Qwen2Encoder>(checkpoint, dims_.qwen2, query_tokens, pool, precision);
  }
  projector_ = load_linear(checkpoint, "model.projector.layers", dims_.embed, dims_.projector_input, true);
  if (dims_.kind == VisionKind::DeepEncoder) image_newline_ = load_f32(checkpoint, "model.image_newline", {dims_.embed});
  view_separator_ = load_f32(checkpoint, "model.view_seperator", {dims_.embed});
}

int64_t VisionEncoder::tokens_per_view(int64_t side) const {
  check_view_side(dims_, side);
  const int64_t grid = sam_.output_grid(side);
  return grid * grid;
}

/* projected[n, tokens, embed] = encoder(pixels[n, 3, side, side]) */
VisionOutput VisionEncoder::encode(const float* pixels, int64_t n, int64_t side, bool keep_intermediates,
                                   const BetweenLayers& between_layers) const {
  const int64_t tokens = tokens_per_view(side);
  if (n <= 0) throw std::invalid_argument("vision encoder: needs at least one view");
  const int64_t C = dims_.sam.net3, grid = sam_.output_grid(side), rows = n * tokens;
  VisionOutput result;
  result.tokens_per_view = tokens;

  Clock::time_point lap = Clock::now();
  std::vector<float> sam;  // [n, grid, grid, C]: row-major token order is the §5.2 flattening
  sam_.encode(pixels, n, side, sam, between_layers);
  result.stage_ms.sam = lap_ms(lap);

  std::vector<float> encoded;  // [n, tokens, width]
  std::vector<float> features;
  const float* projector_in = nullptr;
  if (clip_) {
    const int64_t W = dims_.clip.width;
    encoded.resize(rows * W);
    clip_->encode(sam.data(), n, tokens, encoded.data(), between_layers);
    result.stage_ms.encoder = lap_ms(lap);
    // Projector input per token: CLIP output first, then the SAM features.
    const int64_t F = W + C;
    features.resize(rows * F);
    for (int64_t r = 0; r < rows; ++r) {
      std::copy(encoded.data() + r * W, encoded.data() + (r + 1) * W, features.data() + r * F);
      std::copy(sam.data() + r * C, sam.data() + (r + 1) * C, features.data() + r * F + W);
    }
    projector_in = features.data();
  } else {
    encoded.resize(rows * dims_.qwen2.dim);
    qwen2_->encode(sam.data(), n, tokens, encoded.data(), between_layers);
    result.stage_ms.encoder = lap_ms(lap);
    projector_in = encoded.data();
  }
  result.projected.resize(rows * dims_.embed);
  linear(pool_, projector_, projector_in, result.projected.data(), rows, precision_);
  result.stage_ms.projector = lap_ms(lap);

  if (keep_intermediates) {
    result.sam_shape = {n, C, grid, grid};
    result.sam.resize(rows * C);
    for (int64_t v = 0; v < n; ++v)
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t c = 0; c < C; ++c) result.sam[(v * C + c) * tokens + t] = sam[(v * tokens + t) * C + c];
    result.encoder = std::move(encoded);
  }
  return result;
}

}  // namespace scriptorium
