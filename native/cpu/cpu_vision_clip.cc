#include "cpu/cpu_vision_clip.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/interpolate.h"
#include "cpu/attention.h"

namespace scriptorium {

ClipEncoder::ClipEncoder(const Checkpoint& checkpoint, const ClipDims& dims, ThreadPool& pool, Precision precision)
    : dims_(dims), pool_(pool), precision_(precision) {
  dims_.validate();
  const std::string p = "model.vision_model.";
  const int64_t W = dims_.width;
  class_embedding_ = load_f32(checkpoint, p + "embeddings.class_embedding", {W});
  positions_ = load_f32(checkpoint, p + "embeddings.position_embedding.weight", {dims_.pos_grid * dims_.pos_grid + 1, W});
  pre_norm_ = load_layer_norm(checkpoint, p + "pre_layrnorm", W, dims_.eps);
  for (int64_t i = 0; i < dims_.layers; ++i) {
    const std::string l = p + "transformer.layers." + std::to_string(i) + ".";
    layers_.push_back(Layer{load_layer_norm(checkpoint, l + "layer_norm1", W, dims_.eps),
                            load_layer_norm(checkpoint, l + "layer_norm2", W, dims_.eps),
                            load_linear(checkpoint, l + "self_attn.qkv_proj", 3 * W, W, true),
                            load_linear(checkpoint, l + "self_attn.out_proj", W, W, true),
                            load_linear(checkpoint, l + "mlp.fc1", dims_.mlp, W, true),
                            load_linear(checkpoint, l + "mlp.fc2", W, dims_.mlp, true)});
  }
}

/* out[n, tokens, width] = CLIP(patches[n, tokens, width]) without the CLS row */
void ClipEncoder::encode(const float* patches, int64_t n, int64_t tokens, float* out, const BetweenLayers& between_layers) const {
  const int64_t grid = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(tokens))));
  if (n <= 0 || tokens <= 0 || grid * grid != tokens)
    throw std::invalid_argument("CLIP: needs at least one view of a square token grid, got " + std::to_string(tokens) +
                                " tokens");
  const int64_t W = dims_.width, L = tokens + 1, rows = n * L, P = dims_.pos_grid;

  // Position rows for CLS + grid: the stored grid, bicubic-resized when the grid side differs.
  std::vector<float> positions(L * W);
  std::copy(positions_.begin(), positions_.begin() + W, positions.begin());
  if (grid == P)
    std::copy(positions_.begin() + W, positions_.end(), positions.begin() + W);
  else
    resize_bicubic_aa(pool_, positions_.data() + W, P, P, W, positions.data() + W, grid, grid);

  LargeBuffer<float> x(rows * W);
  for (int64_t v = 0; v < n; ++v) {
    float* seq = x.data() + v * L * W;
    std::copy(class_embedding_.begin(), class_embedding_.end(), seq);
    std::copy(patches + v * tokens * W, patches + (v + 1) * tokens * W, seq + W);
    add_in_place(pool_, seq, positions.data(), L * W);
  }
  layer_norm(pool_, pre_norm_, x.data(), x.data(), rows);

  // Each LayerNorm but the first is applied by the product before it, to each row it writes.
  const int64_t heads = dims_.heads, D = W / heads;
  LargeBuffer<float> normed(rows * W), qkv(rows * 3 * W), attn(rows * W), hidden(rows * dims_.mlp);
  layer_norm(pool_, layers_.front().norm1, x.data(), normed.data(), rows);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& layer = layers_[i];
    linear(pool_, layer.qkv, normed.data(), qkv.data(), rows, precision_);
    const AttentionTensors tensors{qkv.data(), 3 * W, qkv.data() + W, 3 * W, qkv.data() + 2 * W, 3 * W, attn.data(), W};
    attention(pool_, tensors, AttentionShape{n, L, L, heads, heads, D, 1.0f / std::sqrt(static_cast<float>(D))},
              precision_);
    Epilogue residual_then_norm2;
    residual_then_norm2.residual = x.data();
    residual_then_norm2.norm = &layer.norm2;
    linear(pool_, layer.out_proj, attn.data(), normed.data(), rows, precision_, residual_then_norm2);
    Epilogue quick_gelu;
    quick_gelu.activation = Activation::QuickGelu;
    linear(pool_, layer.fc1, normed.data(), hidden.data(), rows, precision_, quick_gelu);
    Epilogue residual_then_next_norm;
    residual_then_next_norm.residual = x.data();
    residual_then_next_norm.norm = i + 1 < layers_.size() ? &layers_[i + 1].norm1 : nullptr;
    linear(pool_, layer.fc2, hidden.data(), normed.data(), rows, precision_, residual_then_next_norm);
    between_layers();
  }
  for (int64_t v = 0; v < n; ++v)
    std::copy(x.data() + (v * L + 1) * W, x.data() + (v + 1) * L * W, out + v * tokens * W);
}

}  // namespace scriptorium
