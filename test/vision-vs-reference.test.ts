// Whole pages through the native engine against the float64 reference (tiny checkpoints): the
// assembled vision embeddings within 1e-3 of their largest value, then prefill logits and 200
// greedy steps as in decoder-vs-reference. Both sides read the same preprocessed pixels
// (preprocessing is checked against Pillow on its own).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { VisionMode } from '../src/engine/image-tokens.js';
import type { Variant } from '../src/engine/model-config.js';
import { OcrEngine, type PreparedPrompt } from '../src/engine/ocr-engine.js';
import type { RgbImage } from '../src/documents/rgb-image.js';
import type { OcrTask } from '../src/engine/prompts.js';
import { ReferenceDecoder } from './reference/reference-decoder.js';
import { assembleV1V3, assembleV2 } from './reference/vision-assembly.js';
import { ReferenceVision } from './reference/vision-reference.js';
import { compareDecoding, describeComparison, maxAbs, maxAbsDiff, RELATIVE_TOLERANCE } from './support/compare-with-reference.js';
import { syntheticPage } from './support/synthetic-images.js';
import { tinyCheckpoint } from './support/tiny-checkpoints.js';

const STEPS = 200;

/** The reference's rows for a prepared prompt: each page encoded view by view and assembled. */
function referenceEmbeds(vision: ReferenceVision, prepared: PreparedPrompt, v2: boolean): Float64Array {
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

interface Case {
  name: string;
  variant: Variant;
  task: OcrTask;
  mode: VisionMode;
  pages: RgbImage[];
  /** Expected K per page. */
  imageTokens: number;
}

const CASES: Case[] = [
  { name: 'V1 base', variant: 'v1', task: 'ocr', mode: 'base', pages: [syntheticPage(800, 1000, 1)], imageTokens: 273 },
  { name: 'V1 gundam, 2×1 tiles', variant: 'v1', task: 'ocr', mode: 'gundam', pages: [syntheticPage(1280, 640, 2)], imageTokens: 273 + 10 * 21 },
  { name: 'V2, one view (no tiles)', variant: 'v2', task: 'ocr', mode: 'gundam', pages: [syntheticPage(700, 700, 3)], imageTokens: 257 },
  { name: 'V2, 2×2 tiles', variant: 'v2', task: 'ocr', mode: 'gundam', pages: [syntheticPage(1536, 1536, 4)], imageTokens: 257 + 4 * 144 },
  { name: 'V3 base', variant: 'v3', task: 'parse', mode: 'base', pages: [syntheticPage(900, 1100, 5)], imageTokens: 273 },
  {
    name: 'V3 three pages in one pass',
    variant: 'v3',
    task: 'parse-multi',
    mode: 'base',
    pages: [syntheticPage(900, 1100, 5), syntheticPage(1000, 700, 6), syntheticPage(600, 900, 7)],
    imageTokens: 273,
  },
];

describe('whole pages: native engine vs float64 reference', () => {
  for (const c of CASES) {
    test(`${c.name}: vision embeddings, prefill logits and ${STEPS} greedy steps agree`, async (t) => {
      const dir = await tinyCheckpoint(c.variant);
      const engine = await OcrEngine.load(dir);
      const prepared = await engine.prepare(c.pages, c.task, c.mode);
      assert.equal(prepared.imagePositions.length, c.imageTokens * c.pages.length);

      const expected = referenceEmbeds(ReferenceVision.load(dir), prepared, c.variant === 'v2');
      const error = maxAbsDiff(prepared.visionEmbeds, expected);
      const tolerance = RELATIVE_TOLERANCE * maxAbs(expected);
      assert.ok(error <= tolerance, `vision embeddings: max abs error ${error} > ${tolerance}`);

      const comparison = await compareDecoding(engine.model, ReferenceDecoder.load(dir), prepared.promptIds, STEPS, {
        native: { rows: prepared.imagePositions, values: prepared.visionEmbeds },
        reference: { positions: [...prepared.imagePositions], rows: expected },
      });
      t.diagnostic(`vision embeddings max abs error ${error.toExponential(2)} (tolerance ${tolerance.toExponential(2)}); ${describeComparison(comparison)}`);
    });
  }
});
