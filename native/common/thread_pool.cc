// ThreadPool: n_threads - 1 workers plus the caller pull fixed-size chunks off an atomic cursor.
// A dispatch bumps generation_; workers poll it for kSpin before sleeping on wake_.
#include "common/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace scriptorium {

namespace {

constexpr auto kSpin = std::chrono::microseconds(100);
constexpr int64_t kMaxChunksPerThread = 8;
constexpr int kCallerSpins = 4096;  // pause rounds before the caller starts yielding

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_main(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t grains = (n + grain - 1) / grain;
  if (n_threads_ == 1 || grains == 1) {
    fn(0, n);
    return;
  }
  const int64_t max_chunks = kMaxChunksPerThread * n_threads_;
  task_ = &fn;
  task_n_ = n;
  task_chunk_ = grain * ((grains + max_chunks - 1) / max_chunks);
  next_chunk_.store(0, std::memory_order_relaxed);
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();

  run_chunks();
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kCallerSpins) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::run_chunks() {
  const auto& fn = *task_;
  const int64_t n = task_n_;
  const int64_t chunk = task_chunk_;
  for (;;) {
    const int64_t begin = next_chunk_.fetch_add(chunk, std::memory_order_relaxed);
    if (begin >= n) return;
    fn(begin, std::min(n, begin + chunk));
  }
}

void ThreadPool::worker_main(int /*index*/) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    if (gen == seen) {
      const auto start = std::chrono::steady_clock::now();
      while ((gen = generation_.load(std::memory_order_acquire)) == seen &&
             std::chrono::steady_clock::now() - start < kSpin) {
        cpu_relax();
      }
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] {
        return stopping_ || generation_.load(std::memory_order_relaxed) != seen;
      });
      if (stopping_) return;
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    run_chunks();
    pending_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace scriptorium
