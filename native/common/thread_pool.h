// One pool of worker threads per model, shared by every kernel. parallel_for splits [0, n) into
// contiguous chunks, runs them on the pool and the calling thread, and returns when all are done.
// Workers spin briefly after a task before sleeping, so back-to-back dispatches in a decode step
// avoid futex wake-up latency.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace scriptorium {

class ThreadPool {
 public:
  // n_threads counts the calling thread: ThreadPool(1) runs everything inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(begin, end) over disjoint chunks covering [0, n); chunks are multiples of `grain`
  // (except the last), grown so there are at most 8 per thread. Blocks until every chunk has
  // run. n <= 0 returns at once. Not re-entrant; fn must not throw.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_main(int index);
  void run_chunks();

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int64_t> next_chunk_{0};
  bool stopping_ = false;
  const std::function<void(int64_t, int64_t)>* task_ = nullptr;
  int64_t task_n_ = 0;
  int64_t task_chunk_ = 0;
};

}  // namespace scriptorium
