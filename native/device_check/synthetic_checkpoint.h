// Synthetic checkpoints written natively, for the device check (device_check.cc), which runs where
// there is no Node.js: the same BF16 values as the TypeScript generator (src/model/synth/
// random-weights.ts) for the same seed and tensor names, so that a tiny checkpoint written here on a
// lent GPU machine is bitwise the one the CPU reference was computed on elsewhere.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace scriptorium {

// One tensor of a checkpoint's manifest (src/model/synth/tensor-manifest.ts): its values are
// N(mean, std²) quantised to 65,536 equiprobable levels, stored as BF16.
struct SyntheticTensor {
  std::string name;
  std::vector<int64_t> shape;
  double mean = 0, std = 1;
};

// Writes `dir`/model.safetensors (dir must exist) holding `tensors` in order, every one BF16, filled
// by `threads` threads. Throws std::runtime_error naming the file when it cannot be written.
void write_synthetic_checkpoint(const std::string& dir, const std::vector<SyntheticTensor>& tensors, uint32_t seed,
                                int threads);

}  // namespace scriptorium
