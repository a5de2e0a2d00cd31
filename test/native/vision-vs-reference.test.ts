// Whole pages through the native engine against the float64 reference (tiny checkpoints), in each
// --precision mode: the assembled vision embeddings within the mode's relative error and cosine
// bounds (exact also within 1e-3 of their largest value), then prefill logits and 200 greedy steps
// as in decoder-vs-reference at the mode's logit bound (test/support/precision-bounds.ts). Both
// sides read the same preprocessed pixels (preprocessing is checked against Pillow on its own); the
// reference runs once per page and serves both modes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { OcrTask, Variant, VisionMode } from '../../src/vocabulary/ocr-vocabulary.js';
import { OcrEngine } from '../../src/engine/ocr-engine.js';
import type { RgbImage } from '../../src/documents/rgb-image.js';
import { ReferenceDecoder } from '../reference/reference-decoder.js';
import { greedyReference, type GreedyResult } from '../reference/reference-generate.js';
import { ReferenceVision } from '../reference/vision-reference.js';
import { compareDecoding, describeComparison, maxAbs, maxAbsDiff, RELATIVE_TOLERANCE } from '../support/compare-with-reference.js';
import { embedAgreement } from '../../bench/engine/precision-accuracy.js';
import { assertEmbedsWithin, PRECISION_BOUNDS, PRECISIONS } from '../support/precision-bounds.js';
import { referenceEmbeds } from '../support/reference-embeds.js';
import { syntheticPage } from '../support/synthetic-images.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const STEPS = 200;

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

describe('whole pages: native engine vs float64 reference, exact and fast', () => {
  for (const c of CASES) {
    test(`${c.name}: vision embeddings, prefill logits and ${STEPS} greedy steps agree in each precision`, async (t) => {
      const dir = await tinyCheckpoint(c.variant);
      let expected: { embeds: Float64Array; greedy: GreedyResult } | undefined;
      for (const precision of PRECISIONS) {
        const engine = await OcrEngine.load(dir, { precision });
        const prepared = await engine.prepare(c.pages, c.task, c.mode);
        assert.equal(prepared.imagePositions.length, c.imageTokens * c.pages.length);
        if (!expected) {
          const embeds = referenceEmbeds(ReferenceVision.load(dir), prepared, c.variant === 'v2');
          const rows = { positions: [...prepared.imagePositions], rows: embeds };
          expected = { embeds, greedy: greedyReference(ReferenceDecoder.load(dir), prepared.promptIds, STEPS, { topk: 2, embeds: rows }) };
        }
        const agreement = embedAgreement(prepared.visionEmbeds, expected.embeds, engine.model.config.decoder.hidden);
        assertEmbedsWithin(agreement, precision);
        const error = maxAbsDiff(prepared.visionEmbeds, expected.embeds);
        if (precision === 'exact') {
          const tolerance = RELATIVE_TOLERANCE * maxAbs(expected.embeds);
          assert.ok(error <= tolerance, `vision embeddings: max abs error ${error} > ${tolerance}`);
        }
        const native = { rows: prepared.imagePositions, values: prepared.visionEmbeds };
        const comparison = await compareDecoding(engine.model, expected.greedy, prepared.promptIds, native, PRECISION_BOUNDS[precision].logits);
        t.diagnostic(
          `${precision} (${engine.model.kernels}): vision embeddings relative error ${agreement.relativeError.toExponential(2)}, ` +
            `worst row cosine 1 - ${(1 - agreement.cosine).toExponential(2)}, max abs error ${(error / maxAbs(expected.embeds)).toExponential(2)} ` +
            `of the largest value; ${describeComparison(comparison)}`,
        );
      }
    });
  }
});
