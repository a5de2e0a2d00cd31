// Assembly of projected vision features into the rows that replace an image's K `<image>` tokens
// (docs/model.md §5.6). Rows are in the order they fill the image positions: the local tiles'
// block (if any), then the global view's block, then the view separator.

/** Projected features of one view size: values[views, tokensPerView, width], tokensPerView = side². */
export interface ViewFeatures {
  values: Float32Array;
  views: number;
  side: number;
  width: number;
}

function checkViews(features: ViewFeatures, what: string): void {
  const expected = features.views * features.side * features.side * features.width;
  if (features.values.length !== expected) {
    throw new Error(`${what}: ${features.values.length} values, expected ${features.views}×${features.side}²×${features.width}`);
  }
}

/**
 * V1/V3 (DeepEncoder): the global grid G×G with `newline` after every row; tiles arranged into one
 * (j·T)×(i·T) grid (tile k at column k mod i, row k div i) with `newline` after every big row.
 * Returns rows[K, width], K = [j·T·(i·T+1)] + G·(G+1) + 1.
 */
export function assembleDeepEncoder(
  global: ViewFeatures,
  tiles: { features: ViewFeatures; columns: number; rows: number } | undefined,
  newline: Float32Array,
  separator: Float32Array,
): Float32Array {
  checkViews(global, 'global view');
  if (global.views !== 1) throw new Error('assembleDeepEncoder: exactly one global view');
  const width = global.width;
  const rowsOut: Float32Array[] = [];
  const push = (values: Float32Array, offset: number) => rowsOut.push(values.subarray(offset, offset + width));
  if (tiles) {
    const { features, columns, rows } = tiles;
    checkViews(features, 'tiles');
    if (features.views !== columns * rows) throw new Error(`tiles: ${features.views} views for a ${columns}×${rows} grid`);
    const T = features.side;
    for (let bigRow = 0; bigRow < rows * T; bigRow++) {
      const tileRow = Math.floor(bigRow / T);
      const innerRow = bigRow % T;
      for (let bigCol = 0; bigCol < columns * T; bigCol++) {
        const tile = tileRow * columns + Math.floor(bigCol / T);
        const token = innerRow * T + (bigCol % T);
        push(features.values, (tile * T * T + token) * width);
      }
      rowsOut.push(newline);
    }
  }
  const G = global.side;
  for (let row = 0; row < G; row++) {
    for (let col = 0; col < G; col++) push(global.values, (row * G + col) * width);
    rowsOut.push(newline);
  }
  rowsOut.push(separator);
  return concatRows(rowsOut, width);
}

/**
 * V2 (DeepEncoder V2): each tile's query outputs in tile order, then the global view's, then the
 * separator; no newlines. Returns rows[K, width], K = 144·n + 256 + 1 at the real sizes.
 */
export function assembleDeepEncoderV2(
  global: ViewFeatures,
  tiles: ViewFeatures | undefined,
  separator: Float32Array,
): Float32Array {
  checkViews(global, 'global view');
  const parts: Float32Array[] = [];
  if (tiles) {
    checkViews(tiles, 'tiles');
    parts.push(tiles.values);
  }
  parts.push(global.values, separator);
  return concatRows(parts, global.width);
}

function concatRows(parts: Float32Array[], width: number): Float32Array {
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  if (total % width !== 0) throw new Error('assembly: rows of unequal width');
  const out = new Float32Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
