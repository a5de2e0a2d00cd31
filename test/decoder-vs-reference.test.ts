// The native decoder against the independent float64 reference (test/reference) on tiny
// checkpoints, 200 greedy steps (V3: the window slides from step 129 on). Tolerances in
// test/support/compare-with-reference.ts.
import { describe, test } from 'node:test';

import type { Variant } from '../src/engine/model-config.js';
import { NativeModel } from '../src/engine/native-model.js';
import { ReferenceDecoder } from './reference/reference-decoder.js';
import { compareDecoding, describeComparison } from './support/compare-with-reference.js';
import { tinyCheckpoint } from './support/tiny-checkpoints.js';

// A prompt of ordinary ids long enough to exercise multi-row prefill attention.
const PROMPT = [0, ...Array.from({ length: 40 }, (_, i) => 1000 + ((i * 7919) % 90000))];

describe('native decoder vs float64 reference', () => {
  for (const variant of ['v1', 'v3'] as Variant[]) {
    test(`${variant}: prefill logits and 200 greedy steps agree`, async (t) => {
      const dir = await tinyCheckpoint(variant);
      const comparison = await compareDecoding(await NativeModel.load(dir), ReferenceDecoder.load(dir), PROMPT, 200);
      t.diagnostic(describeComparison(comparison));
    });
  }
});
