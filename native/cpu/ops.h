// Threaded drivers over the active KernelSet: each splits its work across the ThreadPool.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "common/precision.h"
#include "common/safetensors.h"
#include "common/thread_pool.h"
#include "cpu/kernels.h"

namespace scriptorium {

// Work on rows [m0, m1) of a product's Y once those rows hold their products (a bias, an
// activation, a residual add): called from pool threads on disjoint row ranges covering [0, M).
using RowEpilogue = std::function<void(int64_t m0, int64_t m1)>;

// Y[M, N] = X[M, K] @ W[N, K]^T; X f32 (row stride K), W bf16, Y f32 (row stride N).
// Split over N in chunks sized so each thread streams its share of W once for all M rows; with
// many rows (vision encoders, long prefills) split over M instead, so each X row is converted once.
// Either way each Y element is bitwise the same (KernelSet::gemm_bf16 is row invariant).
// `epilogue`, when given, runs on the row split right after each block of about 1 MiB of Y rows
// is computed, by the same thread while they are in cache; on the column split, after the
// product, over all rows.
void matmul_bf16(ThreadPool& pool, const float* X, const bf16_t* W, float* Y, int64_t M, int64_t N,
                 int64_t K, Precision precision, const RowEpilogue& epilogue = {});

// `bytes` of anonymous memory that starts on a 2 MiB boundary, advised onto huge pages; fresh pages
// read as zero. Unmapped with the last owner.
std::shared_ptr<void> map_huge_pages(size_t bytes);

// Asks Linux to back [start, start + bytes) with transparent huge pages: a hint, which systems
// without that advice (macOS) go without.
void advise_huge_pages(void* start, size_t bytes);

// A call's large activations (a batch of views through an encoder, attention's operands): memory
// from map_huge_pages, so hundreds of megabytes fault in 2 MiB at a time instead of 4 KiB, and
// nothing is written by the buffer itself: the kernels' own parallel writes are the first touch,
// where a std::vector would zero-fill it on one thread first. Growing maps new memory and drops
// the old contents; shrinking keeps them.
template <typename T>
class LargeBuffer {
  static_assert(std::is_trivial_v<T>, "LargeBuffer holds plain values");

 public:
  LargeBuffer() = default;
  explicit LargeBuffer(int64_t n) { resize(n); }
  void resize(int64_t n) {
    if (n > capacity_) {
      memory_ = map_huge_pages(static_cast<size_t>(n) * sizeof(T));
      capacity_ = n;
    }
    size_ = n;
  }
  int64_t size() const { return size_; }
  T* data() { return static_cast<T*>(memory_.get()); }
  const T* data() const { return static_cast<const T*>(memory_.get()); }

 private:
  std::shared_ptr<void> memory_;
  int64_t size_ = 0, capacity_ = 0;
};

// `bytes` (rounded up to 64) of zeroed memory for a weight, on 64 MiB anonymous slabs advised onto
// 2 MiB huge pages and shared by the weights placed one after another in call order (one over a
// quarter slab gets a mapping of its own): so that a model's many small matrices (experts of 1 to
// 2.3 MB) sit on huge pages too, with fewer page faults while they are written and far fewer TLB
// misses while they are streamed. A slab is unmapped with the last weight on it.
std::shared_ptr<void> place_on_slabs(size_t bytes);

// A weight's array of n values on place_on_slabs' memory.
template <typename T>
class SlabArray {
  static_assert(std::is_trivial_v<T>, "SlabArray holds plain values");

 public:
  SlabArray() = default;
  SlabArray(size_t n, T fill) : data_(std::static_pointer_cast<T>(place_on_slabs(n * sizeof(T)))), size_(n) {
    std::fill_n(data_.get(), n, fill);
  }
  size_t size() const { return size_; }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  T& operator[](size_t i) { return data_.get()[i]; }
  const T& operator[](size_t i) const { return data_.get()[i]; }

 private:
  std::shared_ptr<T> data_;
  size_t size_ = 0;
};

// Weights W[N, K] packed once for KernelSet::gemm_bf16_packed (the layout beside kPanelColumns in
// kernels.h), on kernel sets that have packed products (the others read W as stored), placed on
// slabs (place_on_slabs) unless given their storage. Default-constructed: empty.
class PackedBf16 {
 public:
  PackedBf16() = default;
  // Safe to call from several threads at once.
  PackedBf16(const bf16_t* W, int64_t N, int64_t K);
  // Packs W into `storage` (bytes(N, K) of it, 64-byte aligned), which it then holds.
  PackedBf16(const bf16_t* W, int64_t N, int64_t K, std::shared_ptr<const bf16_t> storage);
  // Weights packed before (by this or another process, into a file both map).
  explicit PackedBf16(std::shared_ptr<const bf16_t> packed) : data_(std::move(packed)) {}
  // The bytes W[N, K] takes packed.
  static size_t bytes(int64_t N, int64_t K);
  bool empty() const { return !data_; }
  const bf16_t* data() const { return data_.get(); }

 private:
  std::shared_ptr<const bf16_t> data_;
};

// matmul_bf16 against packed weights: the same splits, each Y element bitwise independent of them
// (but not matmul_bf16's: the packed kernels round in another order). W must not be empty.
void matmul_bf16_packed(ThreadPool& pool, const float* X, const PackedBf16& W, float* Y, int64_t M, int64_t N,
                        int64_t K, Precision precision, const RowEpilogue& epilogue = {});

// A model's BF16 weight W[N, K]: the checkpoint's rows, or those rows packed once at load where the
// kernel set multiplies packed weights (pack_weight; the rows' pages are then released and only
// `packed` is read).
struct Bf16Weight {
  const bf16_t* rows = nullptr;
  PackedBf16 packed;
};

// Packs W[N, K], mapped from `checkpoint`, where the active kernel set multiplies packed weights,
// and releases its mapped rows (they are not read again); leaves it as it is on other sets.
// Safe to call for different weights from several threads at once.
void pack_weight(const Checkpoint& checkpoint, Bf16Weight& W, int64_t N, int64_t K);
// The same into `storage` (PackedBf16::bytes(N, K) of it), on kernel sets with packed products.
void pack_weight(const Checkpoint& checkpoint, Bf16Weight& W, int64_t N, int64_t K, std::shared_ptr<const bf16_t> storage);

// matmul_bf16 or matmul_bf16_packed, whichever form W is held in.
void matmul_bf16(ThreadPool& pool, const float* X, const Bf16Weight& W, float* Y, int64_t M, int64_t N, int64_t K,
                 Precision precision, const RowEpilogue& epilogue = {});

// One product of a group: Y[M, N] = X[M, K] @ W[N, K]^T, row strides K (X) and N (Y).
struct MatmulBf16 {
  const float* X;
  const Bf16Weight* W;
  float* Y;
  int64_t M, N, K;
};

// Runs every product of the group in one dispatch over their concatenated columns, so a layer's
// small products (q/k/v, the selected experts) share one wake-up of the pool. The weights are all
// packed or all rows. Each Y element is bitwise what matmul_bf16 gives at the same precision.
void matmul_bf16_group(ThreadPool& pool, const std::vector<MatmulBf16>& group, Precision precision);

// Same with F32 weights W[N, K].
void matmul_f32(ThreadPool& pool, const float* X, const float* W, float* Y, int64_t M, int64_t N,
                int64_t K);

}  // namespace scriptorium
