#include "vulkan/gpu_vision_encoder.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace scriptorium::vk {

namespace {

using Clock = std::chrono::steady_clock;

/* milliseconds from `start` to now; `start` moves to now */
double lap_ms(Clock::time_point& start) {
  const Clock::time_point now = Clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - start).count();
  start = now;
  return ms;
}

}  // namespace

GpuVisionEncoder::GpuVisionEncoder(Device& device, const Checkpoint& checkpoint, const VisionDims& dims,
                                   const std::string& matmul_path, Precision precision)
    : dims_(dims), ctx_(device, matmul_path, precision) {
  dims_.validate();
  sam_ = std::make_unique<GpuSam>(ctx_, checkpoint, dims_.sam);
  if (dims_.kind == VisionKind::DeepEncoder) {
    clip_ = std::make_unique<GpuClip>(ctx_, checkpoint, dims_.clip);
  } else {
    std::vector<int64_t> query_tokens;
    for (int64_t side : dims_.qwen2.query_sides) {
      check_view_side(dims_, side);
      const int64_t grid = sam_->output_grid(static_cast<uint32_t>(side));
      query_tokens.push_back(grid * grid);
    }
    qwen2_ = std::make_unique<GpuQwen2>(ctx_, checkpoint, dims_.qwen2, query_tokens);
  }
  projector_ = load_gpu_linear(ctx_, checkpoint, "model.projector.layers", dims_.embed, dims_.projector_input);
  ctx_.params.upload(device, ctx_.transfer);
}

uint32_t GpuVisionEncoder::encoder_width() const {
  return static_cast<uint32_t>(clip_ ? dims_.clip.width : dims_.qwen2.dim);
}

/* projected[n, tokens, embed] = encoder(pixels[n, 3, side, side]) */
VisionOutput GpuVisionEncoder::encode(const float* pixels, int64_t n, int64_t side, bool keep_intermediates) {
  check_view_side(dims_, side);
  if (n <= 0) throw std::invalid_argument("vision encoder: needs at least one view");
  const uint32_t s = static_cast<uint32_t>(side), grid = sam_->output_grid(s), tokens = grid * grid;
  const uint64_t C = dims_.sam.net3, F = dims_.projector_input;
  VisionOutput out;
  out.tokens_per_view = tokens;
  out.projected.resize(static_cast<size_t>(n) * tokens * dims_.embed);
  if (keep_intermediates) {
    out.sam_shape = {n, static_cast<int64_t>(C), grid, grid};
    out.sam.resize(static_cast<size_t>(n) * tokens * C);
    out.encoder.resize(static_cast<size_t>(n) * tokens * encoder_width());
  }
  // Views per pass: as many as keep every activation buffer within what the device can bind.
  const uint64_t embed = dims_.embed;
  const uint64_t encoder_floats = clip_ ? clip_->view_floats(tokens) : qwen2_->view_floats(tokens);
  const uint64_t view_floats = std::max({sam_->view_floats(s), encoder_floats, tokens * F, tokens * embed, uint64_t{3} * s * s});
  uint64_t per_pass = ctx_.device.max_storage_range() / sizeof(float) / view_floats;
  if (qwen2_) per_pass = std::min<uint64_t>(per_pass, qwen2_->max_views(tokens));
  per_pass = std::max<uint64_t>(per_pass, 1);
  try {
    for (int64_t v0 = 0; v0 < n; v0 += static_cast<int64_t>(per_pass)) {
      const uint32_t m = static_cast<uint32_t>(std::min<int64_t>(static_cast<int64_t>(per_pass), n - v0));
      encode_views(pixels, static_cast<uint32_t>(v0), m, s, keep_intermediates, out);
    }
  } catch (...) {
    ctx_.batch.discard();
    throw;
  }
  return out;
}

void GpuVisionEncoder::encode_views(const float* pixels, uint32_t v0, uint32_t m, uint32_t side, bool keep, VisionOutput& out) {
  const uint32_t tokens = static_cast<uint32_t>(out.tokens_per_view), rows = m * tokens;
  const uint32_t C = static_cast<uint32_t>(dims_.sam.net3), W = encoder_width();
  const uint32_t F = static_cast<uint32_t>(dims_.projector_input), E = static_cast<uint32_t>(dims_.embed);
  const uint64_t view_pixels = 3ull * side * side;
  Clock::time_point lap = Clock::now();

  Buffer& pixels_buffer = ctx_.scratch(pixels_, m * view_pixels);
  ctx_.transfer.upload(pixels_buffer, 0, pixels + v0 * view_pixels, m * view_pixels * sizeof(float));
  Operand sam{&ctx_.scratch(sam_out_, static_cast<uint64_t>(rows) * C), 0};
  sam_->encode(Operand{&pixels_buffer, 0}, m, side, sam);
  ctx_.batch.run();
  out.stage_ms.sam += lap_ms(lap);

  // Projector input per token: the CLIP output then the SAM features (V1, V3), or the Qwen2 output (V2).
  Operand features{&ctx_.scratch(features_, static_cast<uint64_t>(rows) * F), 0};
  if (clip_) {
    clip_->encode(sam, m, tokens, features, F);
    ctx_.vision_ops.copy_rows(ctx_.batch, sam, 0, C, Operand{features.buffer, W}, 0, F, 1, rows, C);
  } else {
    qwen2_->encode(sam, m, tokens, features);
  }
  ctx_.batch.run();
  out.stage_ms.encoder += lap_ms(lap);

  Operand projected{&ctx_.scratch(projected_, static_cast<uint64_t>(rows) * E), 0};
  linear(ctx_, projector_, features, F, projected, E, rows);
  ctx_.batch.run();
  ctx_.transfer.download(*projected.buffer, 0, out.projected.data() + static_cast<size_t>(v0) * tokens * E,
                         static_cast<size_t>(rows) * E * sizeof(float));
  out.stage_ms.projector += lap_ms(lap);

  if (keep) {
    std::vector<float> host(static_cast<size_t>(rows) * std::max(F, C));
    ctx_.transfer.download(*sam.buffer, 0, host.data(), static_cast<size_t>(rows) * C * sizeof(float));
    for (uint32_t r = 0; r < rows; ++r) {
      const float* row = host.data() + static_cast<size_t>(r) * C;
      const uint32_t v = v0 + r / tokens, t = r % tokens;
      for (uint32_t c = 0; c < C; ++c) out.sam[(static_cast<size_t>(v) * C + c) * tokens + t] = row[c];  // NCHW
    }
    ctx_.transfer.download(*features.buffer, 0, host.data(), static_cast<size_t>(rows) * F * sizeof(float));
    for (uint32_t r = 0; r < rows; ++r) {
      const float* row = host.data() + static_cast<size_t>(r) * F;
      std::copy(row, row + W, out.encoder.data() + (static_cast<size_t>(v0) * tokens + r) * W);
    }
  }
}

}  // namespace scriptorium::vk
