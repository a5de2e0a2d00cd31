// The blocking loops of every vector kernel set's matrix products: Y = X @ W^T and, for k-major right
// operands, Y = X @ B. An instruction set supplies only its register tiles and block sizes; these
// loops decide which tile covers which part of Y and which rows of W a tile prefetches for the next
// block, so the sets differ only where the hardware differs.
//
// Each kernels_<isa>.cc passes a tile type from its own unnamed namespace, which gives every
// instantiation internal linkage: no copy built with one set's ISA flags can be shared with code
// that runs on other CPUs. Keep everything here a template or a plain type for that reason (an
// inline function would be emitted as a weak symbol at -O0).
#pragma once
#include <cstdint>

namespace scriptorium {

// Rows of the next W block that a tile prefetches in step with its k loop: row, row + stride, ...
template <typename WT>
struct WeightPrefetch {
  const WT* row;
  int64_t count;
  int64_t stride;
};

// How Y[M, n0:n1] is cut: register tiles of at most tile_rows x tile_cols outputs; X in blocks of
// block_rows rows and W in panels of panel_rows rows (each sized by its set to stay in L2). Tiles
// prefetch the next W block only with `prefetch`.
struct GemmBlocking {
  int64_t tile_rows, tile_cols, block_rows, panel_rows;
  bool prefetch;
};

/* Y[M, n0:n1] = X[M,K] @ W[n0:n1,K]^T, X rows of type XT (ldx), W rows of type WT (ldw), Y f32 (ldy).
   tile(mr, nr, X, ldx, W, ldw, Y, ldy, K, prefetch) computes Y[mr, nr] = X[mr,K] @ W[nr,K]^T for
   mr <= tile_rows, nr <= tile_cols. W is walked in blocks of tile_cols rows, each reused from L1 by
   every tile of the X block while those tiles prefetch the next W block between them. */
template <typename Tile, typename XT, typename WT>
void gemm_blocked(const Tile& tile, const GemmBlocking& b, const XT* X, int64_t ldx, const WT* W, int64_t ldw,
                  float* Y, int64_t ldy, int64_t M, int64_t n0, int64_t n1, int64_t K) {
  for (int64_t pb = n0; pb < n1; pb += b.panel_rows) {
    const int64_t pe = n1 < pb + b.panel_rows ? n1 : pb + b.panel_rows;
    for (int64_t mb = 0; mb < M; mb += b.block_rows) {
      const int64_t me = M < mb + b.block_rows ? M : mb + b.block_rows;
      const int64_t tiles = (me - mb + b.tile_rows - 1) / b.tile_rows;
      for (int64_t n = pb; n < pe; n += b.tile_cols) {
        const int64_t nr = pe - n < b.tile_cols ? pe - n : b.tile_cols;
        const int64_t after = pe - n - b.tile_cols;  // W rows of the panel beyond this block
        const int64_t next = !b.prefetch || after <= 0 ? 0 : after < b.tile_cols ? after : b.tile_cols;
        for (int64_t m = mb, t = 0; m < me; m += b.tile_rows, ++t) {
          const int64_t mr = me - m < b.tile_rows ? me - m : b.tile_rows;
          WeightPrefetch<WT> ahead{nullptr, 0, 0};
          if (t < next) ahead = {W + (n + b.tile_cols + t) * ldw, (next - t + tiles - 1) / tiles, tiles * ldw};
          tile(mr, nr, X + m * ldx, ldx, W + n * ldw, ldw, Y + m * ldy + n, ldy, K, ahead);
        }
      }
    }
  }
}

/* Y[M, n0:n1] = X[M,K] @ B[K, n0:n1] with B stored k-major (row stride ldb): tiles of at most
   tile_rows x tile_cols, tile(mr, cols, X, ldx, B, ldb, Y, ldy, K) for mr <= tile_rows and
   cols <= tile_cols, each streaming B's rows from L1/L2. Column n of B starts at B + n * Interleave:
   1 for plain rows, 2 when each row of B holds a pair of k rows interleaved (BF16 dot products). */
template <int Interleave = 1, typename Tile, typename XT, typename BT>
void gemm_nn_blocked(const Tile& tile, int64_t tile_rows, int64_t tile_cols, const XT* X, int64_t ldx,
                     const BT* B, int64_t ldb, float* Y, int64_t ldy, int64_t M, int64_t n0, int64_t n1,
                     int64_t K) {
  for (int64_t n = n0; n < n1; n += tile_cols) {
    const int64_t cols = n1 - n < tile_cols ? n1 - n : tile_cols;
    for (int64_t r = 0; r < M; r += tile_rows) {
      const int64_t mr = M - r < tile_rows ? M - r : tile_rows;
      tile(mr, cols, X + r * ldx, ldx, B + n * Interleave, ldb, Y + r * ldy + n, ldy, K);
    }
  }
}

}  // namespace scriptorium
