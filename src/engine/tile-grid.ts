// Tile-grid choice of the official `dynamic_preprocess` / `find_closest_aspect_ratio` (docs/model.md §4.2): the
// grid whose columns/rows ratio is closest to the page's width/height, walked in a fixed candidate order, a tie
// going to the later candidate when the page area exceeds half the grid's pixel area.

/** [columns, rows]: tiles across the width, tiles down the height. */
export type TileGrid = [number, number];

/** Tile limits used by the official paths: 6 (V1 vLLM, V2), 9 (V1 Hugging Face), 32 (V3). */
export type MaxTiles = 6 | 9 | 32;

/**
 * Candidate grids [columns, rows] with 2 ≤ columns·rows ≤ max, in the order the official code walks them: it
 * builds a Python set of (i, j) tuples and sorts it by i·j with a stable sort, so grids with equal products keep
 * the set's iteration order, which follows CPython's tuple hashes and hash-table layout. Produced by running
 * that expression — sorted(set((i, j) for n in range(2, max + 1) for i in range(1, n + 1)
 * for j in range(1, n + 1) if 2 <= i * j <= max), key=lambda x: x[0] * x[1]) — on CPython 3.8 to 3.13 (all
 * give this order); test/engine/tiling.test.ts re-derives it when python3 is installed.
 */
const CANDIDATE_ORDER: Record<MaxTiles, string> = {
  6: '1x2 2x1 3x1 1x3 4x1 1x4 2x2 1x5 5x1 6x1 2x3 1x6 3x2',
  9: '1x2 2x1 3x1 1x3 2x2 4x1 1x4 5x1 1x5 1x6 6x1 3x2 2x3 7x1 1x7 4x2 2x4 1x8 8x1 1x9 3x3 9x1',
  32:
    '1x2 2x1 3x1 1x3 2x2 4x1 1x4 5x1 1x5 6x1 3x2 2x3 1x6 7x1 1x7 4x2 2x4 1x8 8x1 9x1 3x3 1x9 1x10 5x2 10x1 ' +
    '2x5 1x11 11x1 6x2 1x12 2x6 12x1 3x4 4x3 13x1 1x13 14x1 1x14 7x2 2x7 1x15 5x3 3x5 15x1 8x2 16x1 4x4 1x16 ' +
    '2x8 1x17 17x1 18x1 3x6 9x2 1x18 6x3 2x9 1x19 19x1 20x1 5x4 2x10 1x20 4x5 10x2 7x3 1x21 3x7 21x1 2x11 ' +
    '11x2 22x1 1x22 1x23 23x1 1x24 24x1 6x4 3x8 4x6 2x12 8x3 12x2 5x5 1x25 25x1 1x26 2x13 13x2 26x1 9x3 27x1 ' +
    '3x9 1x27 1x28 7x4 14x2 2x14 4x7 28x1 29x1 1x29 3x10 15x2 1x30 2x15 10x3 5x6 30x1 6x5 1x31 31x1 8x4 1x32 ' +
    '4x8 32x1 16x2 2x16',
};

/** The candidate grids for `maxTiles`, in the official walk order. */
export function tileGridCandidates(maxTiles: MaxTiles): TileGrid[] {
  const order = CANDIDATE_ORDER[maxTiles];
  if (order === undefined) throw new RangeError(`no tile candidate order for max ${maxTiles}; use 6, 9 or 32`);
  return order.split(' ').map((pair) => pair.split('x').map(Number) as TileGrid);
}

/** The grid `find_closest_aspect_ratio` picks for a width × height page and tileSide-pixel tiles. */
export function chooseTileGrid(width: number, height: number, tileSide: number, maxTiles: MaxTiles): TileGrid {
  const aspect = width / height;
  const area = width * height;
  let bestDiff = Infinity;
  let best: TileGrid = [1, 1];
  for (const grid of tileGridCandidates(maxTiles)) {
    const diff = Math.abs(aspect - grid[0] / grid[1]);
    if (diff < bestDiff) {
      bestDiff = diff;
      best = grid;
    } else if (diff === bestDiff && area > 0.5 * tileSide * tileSide * grid[0] * grid[1]) {
      best = grid;
    }
  }
  return best;
}
