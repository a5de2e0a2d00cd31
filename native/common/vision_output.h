// What one encode call of a vision encoder returns, on the CPU (VisionEncoder) and the GPU
// (GpuVisionEncoder) alike: the projected rows, stage times and, when asked, the intermediates.
#pragma once
#include <cstdint>
#include <vector>

namespace scriptorium {

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

}  // namespace scriptorium
