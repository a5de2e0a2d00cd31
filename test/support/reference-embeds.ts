// The float64 reference's image rows for a prompt the engine prepared: each page encoded view by
// view and assembled (docs/model.md §5.6), from the same preprocessed pixels the engine read.
import type { PreparedPrompt } from '../../src/engine/ocr-engine.js';
import { assembleV1V3, assembleV2 } from '../reference/vision-assembly.js';
import type { ReferenceVision } from '../reference/vision-reference.js';

/** The reference's rows for a prepared prompt: each page encoded view by view and assembled. */
export function referenceEmbeds(vision: ReferenceVision, prepared: PreparedPrompt, v2: boolean): Float64Array {
  const pages = prepared.pages.map(({ preprocessed: page }) => {
    const global = vision.encode(page.global, page.globalSide);
    const tileCount = page.grid[0] * page.grid[1];
    const tileSize = 3 * page.tileSide * page.tileSide;
    const tiles = page.tiles
      ? Array.from({ length: tileCount }, (_, k) =>
          vision.encode(page.tiles!.subarray(k * tileSize, (k + 1) * tileSize), page.tileSide),
        )
      : [];
    if (v2) return assembleV2(global.projected, vision.viewSeparator, tiles.map((t) => t.projected));
    return assembleV1V3(
      global.projected,
      global.grid,
      vision,
      tiles.length ? { projected: tiles.map((t) => t.projected), i: page.grid[0], j: page.grid[1], T: tiles[0].grid } : undefined,
    );
  });
  const out = new Float64Array(pages.reduce((n, p) => n + p.length, 0));
  pages.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}
