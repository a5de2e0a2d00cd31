// Decode steps over caches longer than one attention task's key range (native/cpu/attention.cc
// splits a decode row's visible keys into ranges of 256 and merges their softmax states per head):
// against the float64 reference on tiny checkpoints, and a long sequence's logits unchanged by the
// sequences it is batched with.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { NativeSequence } from '../../src/engine/native-binding.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { ReferenceDecoder } from '../reference/reference-decoder.js';
import { greedyReference } from '../reference/reference-generate.js';
import { compareDecoding, describeComparison } from '../support/compare-with-reference.js';
import { PRECISION_BOUNDS, PRECISIONS } from '../support/precision-bounds.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

/** Ordinary ids: 520 of them give a decode row three key ranges (256, 256, then the rest). */
const promptOf = (length: number, seed: number) => [0, ...Array.from({ length: length - 1 }, (_, i) => 1000 + ((i * 7919 + seed) % 90000))];
const LONG_PROMPT = promptOf(520, 0);
const STEPS = 4;

describe('decode over a cache longer than one attention task', () => {
  test(`v1: ${STEPS} steps after a ${LONG_PROMPT.length}-token prompt agree with the float64 reference`, async (t) => {
    const dir = await tinyCheckpoint('v1');
    const expected = greedyReference(ReferenceDecoder.load(dir), LONG_PROMPT, STEPS, { topk: 2 });
    for (const precision of PRECISIONS) {
      const model = await NativeModel.load(dir, { precision });
      const comparison = await compareDecoding(model, expected, LONG_PROMPT, undefined, PRECISION_BOUNDS[precision].logits);
      t.diagnostic(`${precision}: ${describeComparison(comparison)}`);
    }
  });

  test('a long sequence batched with others gets bitwise the logits it gets alone', async () => {
    const model = await NativeModel.load(await tinyCheckpoint('v1'));
    const decode = async (prompts: number[][]) => {
      const sequences: NativeSequence[] = prompts.map(() => model.createSequence());
      try {
        let outputs = await model.forward(prompts.map((ids, i) => ({ sequence: sequences[i], ids: Int32Array.from(ids) })));
        const logits = [outputs[0].logits!];
        for (let step = 0; step < 3; step++) {
          outputs = await model.forward(outputs.map((output, i) => ({ sequence: sequences[i], ids: Int32Array.of(output.best) })));
          logits.push(outputs[0].logits!);
        }
        return logits;
      } finally {
        for (const sequence of sequences) sequence.release();
      }
    };
    const alone = await decode([LONG_PROMPT]);
    const batched = await decode([LONG_PROMPT, promptOf(9, 5), promptOf(300, 7)]);
    for (const [step, logits] of alone.entries()) assert.deepEqual(batched[step], logits, `step ${step}`);
  });
});
