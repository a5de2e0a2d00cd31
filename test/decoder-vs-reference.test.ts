// The native decoder against the independent float64 reference (test/reference) on tiny
// checkpoints. Tolerances: prefill logits max abs error <= 1e-3 x max |logit|; greedy ids identical
// for 200 steps, except that from the first step whose reference top-2 gap is below that
// tolerance the run continues teacher-forced on the reference ids and compares each step's
// argmax wherever the reference's choice is unambiguous.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { generate, type GenerationResult } from '../src/engine/generate.js';
import type { Variant } from '../src/engine/model-config.js';
import { NativeDecoder } from '../src/engine/native-decoder.js';
import { ReferenceDecoder } from './reference/reference-decoder.js';
import { greedyReference, type GreedyResult } from './reference/reference-generate.js';
import { tinyCheckpoint } from './support/tiny-checkpoints.js';

const STEPS = 200;
const RELATIVE_TOLERANCE = 1e-3;
// A prompt of ordinary ids long enough to exercise multi-row prefill attention.
const PROMPT = [0, ...Array.from({ length: 40 }, (_, i) => 1000 + ((i * 7919) % 90000))];

function maxAbs(values: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < values.length; i++) m = Math.max(m, Math.abs(values[i]));
  return m;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

for (const variant of ['v1', 'v3'] as Variant[]) {
  describe(`native ${variant} decoder vs float64 reference`, () => {
    let native: NativeDecoder;
    let reference: GreedyResult;
    let free: GenerationResult;
    let forced: GenerationResult;
    let tolerance: number;

    before(async () => {
      const dir = await tinyCheckpoint(variant);
      native = await NativeDecoder.load(dir);
      reference = greedyReference(ReferenceDecoder.load(dir), PROMPT, STEPS, { topk: 2 });
      tolerance = RELATIVE_TOLERANCE * maxAbs(reference.prefillLogits);
      [free, forced] = await generate(native, [
        { promptIds: PROMPT, maxNewTokens: STEPS, stopAtEos: false, keepPrefillLogits: true, recordTopK: 2 },
        { promptIds: PROMPT, maxNewTokens: STEPS, forceIds: reference.ids, recordTopK: 2 },
      ]);
    });

    test('prefill logits agree within 1e-3 of the largest logit', () => {
      const error = maxAbsDiff(free.prefillLogits!, reference.prefillLogits);
      assert.ok(error <= tolerance, `max abs error ${error} > ${tolerance}`);
    });

    test('free-running greedy ids equal the reference up to the first near-tie', () => {
      const nearTie = reference.topk.findIndex((t) => t.logits[0] - t.logits[1] < tolerance);
      const agreeUntil = nearTie === -1 ? STEPS : nearTie;
      assert.deepEqual(free.ids.slice(0, agreeUntil), reference.ids.slice(0, agreeUntil));
    });

    test('teacher-forced on the reference ids, every unambiguous step picks the same token for 200 steps', () => {
      assert.equal(forced.chosen.length, STEPS);
      for (let step = 0; step < STEPS; step++) {
        const gap = reference.topk[step].logits[0] - reference.topk[step].logits[1];
        if (gap < tolerance) continue;
        assert.equal(forced.chosen[step], reference.ids[step], `step ${step}`);
      }
    });

    test('teacher-forced top logits agree with the reference within tolerance at every step', () => {
      for (let step = 0; step < STEPS; step++) {
        const best = reference.topk[step].logits[0];
        const error = Math.abs(forced.topk[step].logits[0] - best);
        assert.ok(error <= tolerance, `step ${step}: top logit ${forced.topk[step].logits[0]} vs ${best}`);
      }
    });
  });
}
