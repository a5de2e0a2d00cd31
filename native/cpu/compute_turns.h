// Turns on one CPU model's cores between its forward calls (decode steps) and the image encodes of
// pages about to join (docs/engine.md "Joining pages"). A forward call runs whole. An encode runs
// in slices, one layer each: between layers it gives the cores to a waiting forward call unless it
// still has time granted. Each forward call grants the encodes after it some milliseconds
// (infinity: no limit); a slice that runs past its grant owes the difference to later grants. When
// no forward call has come for kIdleMs, the batch has stopped decoding and encodes run freely.
#pragma once
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace scriptorium {

class ComputeTurns {
 public:
  // Runs `run` once the cores are free and no encode with time granted waits; then grants the
  // encodes `encode_ms`. Returns the milliseconds `run` held the cores.
  double forward(double encode_ms, const std::function<void()>& run);

  // An encode's hold on the cores: the constructor waits for its first slice, between_layers() ends
  // a slice and waits for the next, the destructor ends the last.
  class Encode {
   public:
    explicit Encode(ComputeTurns& turns) : turns_(turns) { turns_.begin_slice(); }
    ~Encode() { turns_.end_slice(); }
    Encode(const Encode&) = delete;
    Encode& operator=(const Encode&) = delete;
    void between_layers() { turns_.next_slice(); }

   private:
    ComputeTurns& turns_;
  };

 private:
  using Clock = std::chrono::steady_clock;
  // Longer than the few milliseconds JavaScript takes between two steps of a running batch.
  static constexpr std::chrono::milliseconds kIdleMs{50};

  // Whether an encode may run a slice now (the cores aside): time granted, or a batch that has stopped.
  bool encode_may_run(Clock::time_point now) const;
  // Waits until the cores are free and encode_may_run, then takes them; `lock` holds mutex_.
  void wait_for_slice(std::unique_lock<std::mutex>& lock);
  void begin_slice();
  // Ends the running slice and starts the next: at once when the encode may go on, else after
  // the forward calls that go first.
  void next_slice();
  void end_slice();
  void charge_slice(Clock::time_point now);

  std::mutex mutex_;
  std::condition_variable changed_;
  bool busy_ = false;
  int encodes_waiting_ = 0;
  int forwards_waiting_ = 0;
  double encode_credit_ms_ = 0;  // granted by the last forward call, less the slices since
  Clock::time_point last_forward_end_{};  // the epoch: idle until the first forward call
  Clock::time_point slice_start_{};
};

}  // namespace scriptorium
