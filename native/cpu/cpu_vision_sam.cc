#include "cpu/cpu_vision_sam.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/interpolate.h"
#include "cpu/attention.h"

namespace scriptorium {

SamEncoder::SamEncoder(const Checkpoint& checkpoint, const SamDims& dims, ThreadPool& pool, Precision precision)
    : dims_(dims), pool_(pool), precision_(precision) {
  dims_.validate();
  const std::string p = "model.sam_model.";
  const int64_t C = dims_.width, D = C / dims_.heads, P = dims_.pos_grid;
  patch_embed_ = load_conv2d(checkpoint, p + "patch_embed.proj", C, 3, dims_.patch, dims_.patch, 0, true);
  pos_embed_ = load_f32(checkpoint, p + "pos_embed", {1, P, P, C});
  for (int64_t i = 0; i < dims_.layers; ++i) {
    const std::string q = p + "blocks." + std::to_string(i) + ".";
    Block b;
    b.global = std::count(dims_.global_blocks.begin(), dims_.global_blocks.end(), i) > 0;
    b.norm1 = load_layer_norm(checkpoint, q + "norm1", C, dims_.eps);
    b.qkv = load_linear(checkpoint, q + "attn.qkv", 3 * C, C, true);
    b.proj = load_linear(checkpoint, q + "attn.proj", C, C, true);
    b.rel_rows = 2 * (b.global ? P : dims_.window) - 1;
    b.rel_h = load_f32(checkpoint, q + "attn.rel_pos_h", {b.rel_rows, D});
    b.rel_w = load_f32(checkpoint, q + "attn.rel_pos_w", {b.rel_rows, D});
    b.norm2 = load_layer_norm(checkpoint, q + "norm2", C, dims_.eps);
    b.lin1 = load_linear(checkpoint, q + "mlp.lin1", dims_.mlp, C, true);
    b.lin2 = load_linear(checkpoint, q + "mlp.lin2", C, dims_.mlp, true);
    blocks_.push_back(std::move(b));
  }
  neck0_ = load_conv2d(checkpoint, p + "neck.0", dims_.neck, C, 1, 1, 0, false);
  neck1_ = load_layer_norm(checkpoint, p + "neck.1", dims_.neck, dims_.eps);
  neck2_ = load_conv2d(checkpoint, p + "neck.2", dims_.neck, dims_.neck, 3, 1, 1, false);
  neck3_ = load_layer_norm(checkpoint, p + "neck.3", dims_.neck, dims_.eps);
  net2_ = load_conv2d(checkpoint, p + "net_2", dims_.net2, dims_.neck, 3, 2, 1, false);
  net3_ = load_conv2d(checkpoint, p + "net_3", dims_.net3, dims_.net2, 3, 2, 1, false);
}

int64_t SamEncoder::output_grid(int64_t side) const {
  return net3_.output_size(net2_.output_size(side / dims_.patch));
}

/* features[n, h, w, net3] = SAM(pixels[n, 3, side, side]) */
void SamEncoder::encode(const float* pixels, int64_t n, int64_t side, std::vector<float>& features,
                        const BetweenLayers& between_layers) const {
  if (n <= 0) throw std::invalid_argument("SAM: the batch must hold at least one view");
  if (side <= 0 || side % dims_.patch != 0)
    throw std::invalid_argument("SAM: the view side " + std::to_string(side) + " is not a positive multiple of the " +
                                std::to_string(dims_.patch) + "-pixel patch");
  const int64_t g = side / dims_.patch, C = dims_.width, P = dims_.pos_grid, T = n * g * g;
  LargeBuffer<float> x(T * C);
  conv2d(pool_, patch_embed_, pixels, ImageStrides::nchw(3, side, side), n, side, side, x.data(), precision_);
  std::vector<float> resized;
  const float* pos = pos_embed_.data();
  if (g != P) {
    resized.resize(g * g * C);
    resize_bicubic_aa(pool_, pos, P, P, C, resized.data(), g, g);
    pos = resized.data();
  }
  for (int64_t v = 0; v < n; ++v) add_in_place(pool_, x.data() + v * g * g * C, pos, g * g * C);

  Scratch scratch;
  scratch.normed.resize(T * C);
  layer_norm(pool_, blocks_.front().norm1, x.data(), scratch.normed.data(), T);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    run_block(blocks_[i], i + 1 < blocks_.size() ? &blocks_[i + 1].norm1 : nullptr, x, n, g, scratch);
    between_layers();
  }

  const int64_t N = dims_.neck;
  LargeBuffer<float> a(T * N), b(T * N);
  conv2d(pool_, neck0_, x.data(), ImageStrides::nhwc(C, g, g), n, g, g, a.data(), precision_, &neck1_);
  conv2d(pool_, neck2_, a.data(), ImageStrides::nhwc(N, g, g), n, g, g, b.data(), precision_, &neck3_);
  const int64_t g2 = net2_.output_size(g), g3 = net3_.output_size(g2);
  std::vector<float> c(n * g2 * g2 * dims_.net2);
  conv2d(pool_, net2_, b.data(), ImageStrides::nhwc(N, g, g), n, g, g, c.data(), precision_);
  features.resize(n * g3 * g3 * dims_.net3);
  conv2d(pool_, net3_, c.data(), ImageStrides::nhwc(dims_.net2, g2, g2), n, g2, g2, features.data(), precision_);
}

/* x[n, g, g, width] = x + Attn(LN1(x)); x = x + MLP(LN2(x)) */
void SamEncoder::run_block(const Block& block, const LayerNorm* next_norm, LargeBuffer<float>& x, int64_t n, int64_t g,
                           Scratch& scratch) const {
  const int64_t C = dims_.width, T = n * g * g;
  const int64_t grain = std::max<int64_t>(1, 4096 / C);
  LargeBuffer<float>& normed = scratch.normed;
  LargeBuffer<float>& qkv = scratch.qkv;
  LargeBuffer<float>& attn = scratch.attn;
  qkv.resize(T * 3 * C);
  attn.resize(T * C);
  linear(pool_, block.qkv, normed.data(), qkv.data(), T, precision_);
  if (block.global) {
    attend(block, qkv.data(), n, g, attn.data());
  } else {
    // The model zero-pads the normed grid at the bottom/right to a multiple of the window and
    // attends within each window (row-major per view); the padded tokens' q, k and v are then the
    // qkv bias alone. So qkv runs on the real tokens only, whose rows are scattered into the
    // windows beside bias rows, and only the real tokens' outputs are gathered back for proj.
    const int64_t S = dims_.window, per = (g + S - 1) / S, seqs = n * per * per, tokens = S * S;
    LargeBuffer<float>& windows = scratch.windows;  // [seqs * tokens, 3C] q, k, v per window row
    LargeBuffer<float>& windowed_attn = scratch.windowed_attn;
    windows.resize(seqs * tokens * 3 * C);
    windowed_attn.resize(seqs * tokens * C);
    auto window_row = [&](int64_t v, int64_t y, int64_t xx) {
      return ((v * per + y / S) * per + xx / S) * tokens + (y % S) * S + xx % S;
    };
    const int64_t padded_side = per * S;
    pool_.parallel_for(n * padded_side * padded_side, grain, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t v = p / (padded_side * padded_side), y = p / padded_side % padded_side, xx = p % padded_side;
        float* row = windows.data() + window_row(v, y, xx) * 3 * C;
        if (y < g && xx < g) {
          const float* src = qkv.data() + ((v * g + y) * g + xx) * 3 * C;
          std::copy(src, src + 3 * C, row);
        } else {
          std::copy(block.qkv.bias.begin(), block.qkv.bias.end(), row);
        }
      }
    });
    attend(block, windows.data(), seqs, S, windowed_attn.data());
    pool_.parallel_for(T, grain, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const float* a = windowed_attn.data() + window_row(p / (g * g), p / g % g, p % g) * C;
        std::copy(a, a + C, attn.data() + p * C);
      }
    });
  }
  Epilogue residual_then_norm2;
  residual_then_norm2.residual = x.data();
  residual_then_norm2.norm = &block.norm2;
  linear(pool_, block.proj, attn.data(), normed.data(), T, precision_, residual_then_norm2);

  LargeBuffer<float>& hidden = scratch.hidden;
  hidden.resize(T * dims_.mlp);
  Epilogue gelu;
  gelu.activation = Activation::GeluErf;
  linear(pool_, block.lin1, normed.data(), hidden.data(), T, precision_, gelu);
  Epilogue residual_then_next_norm;
  residual_then_next_norm.residual = x.data();
  residual_then_next_norm.norm = next_norm;
  linear(pool_, block.lin2, hidden.data(), normed.data(), T, precision_, residual_then_next_norm);
}

/* out[seqs*S*S, width] = attention of qkv[seqs*S*S, 3*width] with decomposed rel-pos bias */
void SamEncoder::attend(const Block& block, const float* qkv, int64_t seqs, int64_t S, float* out) const {
  const int64_t C = dims_.width, H = dims_.heads, D = C / H, tokens = S * S;

  // Relative offsets along an axis of S positions span 2S - 1 table rows; a stored table of another
  // length (global blocks when the grid is not the stored one) is linearly interpolated first.
  const int64_t needed = 2 * S - 1;
  std::vector<float> rh_resized, rw_resized;
  const float* rh = block.rel_h.data();
  const float* rw = block.rel_w.data();
  if (needed != block.rel_rows) {
    rh_resized.resize(needed * D);
    rw_resized.resize(needed * D);
    resize_linear(rh, block.rel_rows, D, rh_resized.data(), needed);
    resize_linear(rw, block.rel_rows, D, rw_resized.data(), needed);
    rh = rh_resized.data();
    rw = rw_resized.data();
  }

  const KernelSet& kernels = active_kernels();
  AttentionHooks hooks;
  hooks.bias_scratch = 2 * S;
  // bias[(kh, kw)] = q . Rh[qh - kh + S - 1] + q . Rw[qw - kw + S - 1] with the unscaled q.
  // scratch[j] = q . Rh[qh + j] (j < S), so the Rh term of kh is scratch[S - 1 - kh]; same for Rw.
  hooks.bias = [&](int64_t b, int64_t h, int64_t t, float* scores, float* scratch) {
    const float* q = qkv + (b * tokens + t) * 3 * C + h * D;
    const int64_t qh = t / S, qw = t % S;
    kernels.gemm_f32(q, D, rh + qh * D, D, scratch, S, 1, 0, S, D);
    kernels.gemm_f32(q, D, rw + qw * D, D, scratch + S, S, 1, 0, S, D);
    for (int64_t kh = 0; kh < S; ++kh) {
      const float bias_h = scratch[S - 1 - kh];
      float* row = scores + kh * S;
      for (int64_t kw = 0; kw < S; ++kw) row[kw] += bias_h + scratch[2 * S - 1 - kw];
    }
  };
  const AttentionTensors tensors{qkv, 3 * C, qkv + C, 3 * C, qkv + 2 * C, 3 * C, out, C};
  const AttentionShape shape{seqs, tokens, tokens, H, H, D, 1.0f / std::sqrt(static_cast<float>(D))};
  attention(pool_, tensors, shape, precision_, hooks);
}

}  // namespace scriptorium
