// The native decoder against the independent float64 reference on tiny checkpoints, 200 greedy
// steps (V3: the window slides from step 129 on), in each --precision mode at its logit bound
// (test/support/precision-bounds.ts; tolerances in test/support/compare-with-reference.ts).
// On a CPU whose best kernel set multiplies packed weights (avx512bf16), the file runs itself once
// more on the avx512 set, so the decoder on weights read as stored is checked too.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { ReferenceDecoder } from '../reference/reference-decoder.js';
import { greedyReference } from '../reference/reference-generate.js';
import { compareDecoding, describeComparison } from '../support/compare-with-reference.js';
import { PRECISION_BOUNDS, PRECISIONS } from '../support/precision-bounds.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

// A prompt of ordinary ids long enough to exercise multi-row prefill attention.
const PROMPT = [0, ...Array.from({ length: 40 }, (_, i) => 1000 + ((i * 7919) % 90000))];
const STEPS = 200;

describe('native decoder vs float64 reference, exact and fast', () => {
  for (const variant of ['v1', 'v3'] as Variant[]) {
    test(`${variant}: prefill logits and ${STEPS} greedy steps agree in each precision`, async (t) => {
      const dir = await tinyCheckpoint(variant);
      const expected = greedyReference(ReferenceDecoder.load(dir), PROMPT, STEPS, { topk: 2 });
      for (const precision of PRECISIONS) {
        const model = await NativeModel.load(dir, { precision });
        const comparison = await compareDecoding(model, expected, PROMPT, undefined, PRECISION_BOUNDS[precision].logits);
        t.diagnostic(`${precision} (${model.kernels}): ${describeComparison(comparison)}`);
      }
    });
  }

  test('the same on weights read as stored: this file again with SCRIPTORIUM_KERNELS=avx512', async (t) => {
    const model = await NativeModel.load(await tinyCheckpoint('v1'), { precision: 'fast' });
    if (process.env.SCRIPTORIUM_KERNELS !== undefined || model.kernels !== 'avx512bf16') {
      t.skip(`the ${model.kernels} set already reads the weights as stored, or this is that run`);
      return;
    }
    // Without the runner's NODE_TEST_CONTEXT the child reports in plain TAP rather than to this runner.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const child = spawnSync(process.execPath, ['--test', fileURLToPath(import.meta.url)], {
      env: { ...env, SCRIPTORIUM_KERNELS: 'avx512' },
      encoding: 'utf8',
    });
    assert.equal(child.status, 0, child.stdout + child.stderr);
    assert.match(child.stdout, /\(avx512\)/, 'the child must have run on the avx512 set');
  });
});
