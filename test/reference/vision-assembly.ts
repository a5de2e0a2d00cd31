// Assembly of one image's projected view embeddings into the rows that replace its K `<image>` tokens
// (docs/model.md §5.6; counts §6.3). Every function returns rows[K, width] in the order they fill the image positions:
// local block (if any), then the global block, then view_seperator.

/** The learned separator vectors (§3.5), width = n_embed: image_newline is absent in V2. */
export interface SpecialVectors {
  imageNewline?: Float64Array;
  viewSeparator: Float64Array;
}

/** Local tiles of one image: projected[i·j] in row-major tile order, each [T·T, width]; i columns, j rows. */
export interface LocalTiles {
  projected: Float64Array[];
  i: number;
  j: number;
  T: number;
}

/**
 * V1/V3: tiles arranged as one (j·T)×(i·T) grid with image_newline after every grid row, then the global G×G grid
 * with image_newline after every row, then view_seperator: global[G·G, width] → [K, width] with
 * K = (j·T)·(i·T + 1) + G·(G + 1) + 1 (no tiles: G·(G + 1) + 1).
 */
export function assembleV1V3(
  globalProjected: Float64Array,
  G: number,
  specials: SpecialVectors,
  tiles?: LocalTiles,
): Float64Array {
  const { imageNewline: newline, viewSeparator } = specials;
  if (newline === undefined) throw new Error('V1/V3 assembly needs image_newline');
  const width = viewSeparator.length;
  const rows: Float64Array[] = [];
  const row = (view: Float64Array, side: number, r: number, c: number) => {
    if (view.length !== side * side * width) {
      throw new Error(`a view holds ${view.length} values, expected ${side}²×${width}`);
    }
    return view.subarray((r * side + c) * width, (r * side + c + 1) * width);
  };
  if (tiles !== undefined) {
    const { projected, i, j, T } = tiles;
    if (projected.length !== i * j) throw new Error(`${projected.length} tiles for an ${i}×${j} grid`);
    for (let r = 0; r < j * T; r++) {
      for (let c = 0; c < i * T; c++) {
        const tile = projected[Math.floor(r / T) * i + Math.floor(c / T)];
        rows.push(row(tile, T, r % T, c % T));
      }
      rows.push(newline);
    }
  }
  for (let r = 0; r < G; r++) {
    for (let c = 0; c < G; c++) rows.push(row(globalProjected, G, r, c));
    rows.push(newline);
  }
  rows.push(viewSeparator);
  return concatenate(rows, width);
}

/**
 * V2: each tile's query outputs in tile order, then the global view's, then view_seperator (no newlines):
 * global[256, width], tiles[n] each [144, width] → [256 + 144·n + 1, width].
 */
export function assembleV2(
  globalProjected: Float64Array,
  viewSeparator: Float64Array,
  tiles: Float64Array[] = [],
): Float64Array {
  const width = viewSeparator.length;
  return concatenate([...tiles, globalProjected, viewSeparator], width);
}

/**
 * V3 multi-page (base mode): each page's global block, then view_seperator, pages in order:
 * pages[p] each [G·G, width] → [pages·(G·(G+1)+1), width].
 */
export function assembleV3Pages(pages: Float64Array[], G: number, specials: SpecialVectors): Float64Array {
  return concatenate(
    pages.map((page) => assembleV1V3(page, G, specials)),
    specials.viewSeparator.length,
  );
}

/** Concatenates pieces whose lengths are multiples of width: → [Σ rows, width]. */
function concatenate(pieces: Float64Array[], width: number): Float64Array {
  let length = 0;
  for (const piece of pieces) {
    if (piece.length % width !== 0) throw new Error(`a piece of ${piece.length} values is not whole rows of ${width}`);
    length += piece.length;
  }
  const out = new Float64Array(length);
  let offset = 0;
  for (const piece of pieces) {
    out.set(piece, offset);
    offset += piece.length;
  }
  return out;
}
