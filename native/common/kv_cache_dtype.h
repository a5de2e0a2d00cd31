// The element type of a sequence's KV cache, on the CPU (KvCache) and the GPU (GpuKvCache) alike.
#pragma once

namespace scriptorium {

// How a KV cache stores its rows: F32, or IEEE half (half the bytes per decode step; rounding
// errors measured in docs/model.md §7.5).
enum class KvCacheDtype { F32, F16 };

}  // namespace scriptorium
