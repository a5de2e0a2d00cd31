// A streamed log-sum-exp: the largest value folded in so far and the sum of exp(value - largest),
// rescaled whenever a block brings a larger maximum. The vocabulary head folds its chunks of logits
// in id order, so a token's log-probability needs no pass over the logits beyond the argmax's.
#pragma once
#include <cmath>

namespace scriptorium {

struct LogSumExp {
  double max = -INFINITY;
  double sum = 0.0;

  // Folds in one block: its largest value and the sum of exp(x - block_max) over it (sum_exp of
  // the kernel set). A block of -inf values (block_max -inf) adds nothing.
  void fold(double block_max, double block_sum) {
    if (block_max == -INFINITY) return;
    if (block_max > max) {
      sum = sum * std::exp(max - block_max) + block_sum;
      max = block_max;
    } else {
      sum += block_sum * std::exp(block_max - max);
    }
  }

  // log(sum over everything folded of exp(value)); -inf when nothing finite was folded.
  double value() const { return max + std::log(sum); }
};

}  // namespace scriptorium
