#include "cpu/compute_turns.h"

#include <algorithm>
#include <exception>

namespace scriptorium {

double ComputeTurns::forward(double encode_ms, const std::function<void()>& run) {
  std::unique_lock<std::mutex> lock(mutex_);
  ++forwards_waiting_;
  changed_.wait(lock, [&] { return !busy_ && !(encodes_waiting_ > 0 && encode_credit_ms_ > 0); });
  --forwards_waiting_;
  busy_ = true;
  lock.unlock();
  const Clock::time_point start = Clock::now();
  std::exception_ptr failure;
  try {
    run();
  } catch (...) {
    failure = std::current_exception();
  }
  const Clock::time_point end = Clock::now();
  lock.lock();
  busy_ = false;
  last_forward_end_ = end;
  // What a slice overran is owed; time an earlier grant left unused is not carried over.
  encode_credit_ms_ = std::min(encode_credit_ms_, 0.0) + encode_ms;
  changed_.notify_all();
  if (failure) std::rethrow_exception(failure);
  return std::chrono::duration<double, std::milli>(end - start).count();
}

bool ComputeTurns::encode_may_run(Clock::time_point now) const {
  return encode_credit_ms_ > 0 || (forwards_waiting_ == 0 && now >= last_forward_end_ + kIdleMs);
}

void ComputeTurns::wait_for_slice(std::unique_lock<std::mutex>& lock) {
  ++encodes_waiting_;
  for (;;) {
    const Clock::time_point now = Clock::now();
    if (!busy_ && encode_may_run(now)) break;
    if (!busy_ && forwards_waiting_ == 0) {
      changed_.wait_until(lock, last_forward_end_ + kIdleMs);  // idle by then unless a forward call comes
    } else {
      changed_.wait(lock);
    }
  }
  --encodes_waiting_;
  busy_ = true;
  slice_start_ = Clock::now();
}

void ComputeTurns::begin_slice() {
  std::unique_lock<std::mutex> lock(mutex_);
  wait_for_slice(lock);
}

void ComputeTurns::next_slice() {
  std::unique_lock<std::mutex> lock(mutex_);
  const Clock::time_point now = Clock::now();
  charge_slice(now);
  if (encode_may_run(now)) {
    slice_start_ = now;
    return;
  }
  busy_ = false;
  changed_.notify_all();
  wait_for_slice(lock);
}

void ComputeTurns::end_slice() {
  std::lock_guard<std::mutex> lock(mutex_);
  charge_slice(Clock::now());
  busy_ = false;
  changed_.notify_all();
}

void ComputeTurns::charge_slice(Clock::time_point now) {
  encode_credit_ms_ -= std::chrono::duration<double, std::milli>(now - slice_start_).count();
}

}  // namespace scriptorium
