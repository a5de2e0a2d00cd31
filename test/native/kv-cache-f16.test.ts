// The half-precision KV cache (the CPU default) against the F32 cache on the same tiny checkpoint:
// teacher-forced on the F32 cache's greedy ids, every step's logits agree within KV_F16_TOLERANCE
// of the largest logit and the argmax agrees wherever the F32 top-2 gap exceeds twice that; V3
// runs past its 128-slot window, V1 attends a second multi-token call to the widened cache.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import type { NativeSequence } from '../../src/engine/native-binding.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { maxAbs, maxAbsDiff } from '../support/compare-with-reference.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

/** Largest logit error of the half cache, relative to the largest F32 logit of the same step. */
const KV_F16_TOLERANCE = 1e-3;
const PROMPT = [0, ...Array.from({ length: 40 }, (_, i) => 1000 + ((i * 7919) % 90000))];
const STEPS = 200;

interface Models {
  f32: NativeModel;
  f16: NativeModel;
}

async function loadBoth(variant: Variant): Promise<Models> {
  const dir = await tinyCheckpoint(variant);
  return { f32: await NativeModel.load(dir, { kvCache: 'f32' }), f16: await NativeModel.load(dir, { kvCache: 'f16' }) };
}

/** The two largest values of a row, largest first. */
function topTwo(logits: Float32Array): [number, number] {
  let a = -Infinity;
  let b = -Infinity;
  for (const v of logits) {
    if (v > a) [a, b] = [v, a];
    else if (v > b) b = v;
  }
  return [a, b];
}

interface StepComparison {
  worstRelative: number;
  nearTies: number;
}

/** Feeds the same ids to both caches (the F32 cache's argmax after the prompt) and compares each step. */
async function compareSteps(models: Models, calls: number[][], steps: number): Promise<StepComparison> {
  const sequences: [NativeSequence, NativeSequence] = [models.f32.createSequence(), models.f16.createSequence()];
  let worstRelative = 0;
  let nearTies = 0;
  let ids = calls[0];
  for (let step = 0; step < calls.length - 1 + steps; step++) {
    const [exact] = await models.f32.forward([{ sequence: sequences[0], ids: Int32Array.from(ids) }]);
    const [half] = await models.f16.forward([{ sequence: sequences[1], ids: Int32Array.from(ids) }]);
    const scale = maxAbs(exact.logits!);
    const relative = maxAbsDiff(half.logits!, exact.logits!) / scale;
    worstRelative = Math.max(worstRelative, relative);
    assert.ok(relative <= KV_F16_TOLERANCE, `step ${step}: logits off by ${relative} of the largest`);
    const [first, second] = topTwo(exact.logits!);
    if (first - second < 2 * KV_F16_TOLERANCE * scale) nearTies++;
    else assert.equal(half.best, exact.best, `step ${step}: argmax`);
    ids = step + 1 < calls.length ? calls[step + 1] : [exact.best];
  }
  assert.equal(sequences[1].cacheBytes * 2, sequences[0].cacheBytes, 'the half cache holds half the bytes');
  for (const s of sequences) s.release();
  return { worstRelative, nearTies };
}

describe('half-precision KV cache vs F32 cache', () => {
  let v3: Models;
  let v1: Models;
  before(async () => {
    [v3, v1] = await Promise.all([loadBoth('v3'), loadBoth('v1')]);
  });

  test('v3: 200 steps past the 128-slot window stay within the bound', async (t) => {
    const c = await compareSteps(v3, [PROMPT], STEPS);
    t.diagnostic(`max logit error ${c.worstRelative.toExponential(2)} of the largest (bound ${KV_F16_TOLERANCE}); ${c.nearTies} near ties`);
  });

  test('v1: a second multi-token call attends the widened half cache within the bound', async (t) => {
    const c = await compareSteps(v1, [PROMPT.slice(0, 20), PROMPT.slice(20)], 8);
    t.diagnostic(`max logit error ${c.worstRelative.toExponential(2)} of the largest (bound ${KV_F16_TOLERANCE})`);
  });

  test('createSequence refuses an unknown cache dtype', async () => {
    await assert.rejects(
      NativeModel.load(await tinyCheckpoint('v1'), { kvCache: 'bf16' as 'f16' }).then((m) => m.createSequence()),
      /kvCache must be 'f16' or 'f32'/,
    );
  });
});
