// Where a sequence's keys and values live in its KV cache, for the CPU cache (cpu/cpu_decoder.h KvCache)
// and the GPU one (vulkan/gpu_decoder.h GpuKvCache) alike. Slots [0, prefix) hold the prompt: the
// first forward call's tokens, or the whole prompt that the first call names when the prompt comes in
// several calls (a prefill in chunks); with a sliding window W (V3's R-SWA), the generated token g
// (0-based) lives in slot prefix + g % W, so memory stops growing after W generated tokens while
// positions keep counting.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/decoder_dims.h"

namespace scriptorium {

class KvSlotRules {
 public:
  explicit KvSlotRules(const DecoderDims& dims) : window_(dims.sliding_window), max_positions_(dims.max_positions) {}

  int64_t length() const { return length_; }        // tokens consumed = next absolute position
  int64_t prefix_length() const { return prefix_; }  // -1 before the first forward call

  // Slot where the token at absolute position `pos` is stored.
  int64_t slot_of(int64_t pos) const {
    if (window_ == 0 || pos < prefix_) return pos;
    return prefix_ + (pos - prefix_) % window_;
  }
  // Number of leading slots a query at `pos` attends to (all visible keys are slots [0, n)).
  int64_t visible_slots(int64_t pos) const {
    if (window_ == 0 || pos < prefix_) return pos + 1;
    return prefix_ + std::min(pos - prefix_ + 1, window_);
  }

  // Throws std::invalid_argument when `n` new tokens cannot be appended: a windowed sequence's first
  // call names a prompt shorter than its tokens, the context would pass max_position_embeddings, or a
  // windowed sequence gets more than one token in a call past its prompt. `prompt` is the whole
  // prompt's length when the first call holds only its start (0: the call's tokens are the prompt).
  // With full attention the first call may go past the prompt: a sequence preempted by the scheduler
  // reads its prompt and its generated tokens again, naming the prompt as it first did.
  void check_append(int64_t n, int64_t prompt) const {
    if (window_ > 0 && prefix_ < 0 && prompt != 0 && prompt < n)
      throw std::invalid_argument("forward: a prompt of " + std::to_string(prompt) + " tokens cannot start with " +
                                  std::to_string(n));
    if (length_ + n > max_positions_)
      throw std::invalid_argument("forward: context full: " + std::to_string(length_ + n) +
                                  " positions exceed max_position_embeddings " + std::to_string(max_positions_));
    if (window_ > 0 && prefix_ >= 0 && n != 1 && length_ + n > prefix_)
      throw std::invalid_argument("forward: with a sliding window, calls after the prompt take one token each");
  }
  // Starts appending `n` tokens at positions length() .. length() + n - 1 (the first call fixes the
  // prefix: `prompt`, or its own tokens when 0) and returns how many slots the cache must hold for them.
  int64_t begin_append(int64_t n, int64_t prompt) {
    if (prefix_ < 0) prefix_ = prompt != 0 ? prompt : n;
    return std::max(slot_of(length_ + n - 1), slot_of(length_)) + 1;
  }
  // The tokens of begin_append are stored: they count from now on.
  void end_append(int64_t n) { length_ += n; }
  // A begin_append whose tokens were never stored: a prefill that failed leaves the cache empty,
  // so its next call is the prefill again.
  void abandon_append() {
    if (length_ == 0) prefix_ = -1;
  }

  // Slots to allocate when a cache of `capacity` slots must hold `rows`: room for the next
  // kGrowthRows tokens beyond the request and at least half again the current size (so a long
  // prefill is not followed by a full copy on the first decode step), never more than the
  // sequence can use.
  int64_t grown_capacity(int64_t rows, int64_t capacity) const {
    constexpr int64_t kGrowthRows = 256;
    int64_t target = std::max(rows + kGrowthRows, capacity + capacity / 2);
    int64_t limit = max_positions_;
    if (window_ > 0 && prefix_ >= 0) limit = std::min(limit, prefix_ + window_);
    return std::max(rows, std::min(target, limit));
  }

 private:
  int64_t window_, max_positions_;
  int64_t length_ = 0;
  int64_t prefix_ = -1;
};

}  // namespace scriptorium
