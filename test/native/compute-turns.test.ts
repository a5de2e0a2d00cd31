// Encodes and forward calls taking turns on one CPU model (native/cpu/compute_turns.h): an encode
// gives the cores to waiting forward calls between its layers once it has used the time they
// granted it, so decode steps go on while a page is encoded; with no limit granted it goes first.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { NativeModel } from '../../src/engine/native-model.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const SIDE = 1024;
const STEPS = 40;

describe('encodes beside decode steps on the CPU', () => {
  let model: NativeModel;
  const pixels = Float32Array.from({ length: 3 * SIDE * SIDE }, (_, i) => Math.sin(i * 0.001));

  before(async () => {
    model = await NativeModel.load(await tinyCheckpoint('v1'));
  });

  /** Decode steps that finished before an encode started beside them did, each granting `encodeMs`. */
  async function stepsBeforeEncodeEnds(encodeMs: number | undefined): Promise<number> {
    const sequence = model.createSequence();
    // The grant of the last step before the encode holds until the next one.
    await model.step([{ sequence, ids: Int32Array.of(0, 5000, 6000), logits: false }], { encodeMs });
    let encoded = false;
    let finishedBefore = 0;
    const encode = model.encodeImages(pixels, 1, SIDE).then(() => {
      encoded = true;
    });
    let next = 7000;
    for (let step = 0; step < STEPS; step++) {
      const { outputs } = await model.step([{ sequence, ids: Int32Array.of(next), logits: false }], { encodeMs });
      next = outputs[0].best;
      if (!encoded) finishedBefore++;
    }
    await encode;
    sequence.release();
    return finishedBefore;
  }

  test('granted no time, the encode waits between layers while steps keep coming', async () => {
    assert.equal(await stepsBeforeEncodeEnds(0), STEPS);
  });

  test('granted no limit, the encode goes first', async () => {
    assert.ok((await stepsBeforeEncodeEnds(undefined)) <= 2);
  });

  test('a step reports its own time on the engine', async () => {
    const sequence = model.createSequence();
    const { computeMs } = await model.step([{ sequence, ids: Int32Array.of(0, 5000, 6000) }]);
    assert.ok(computeMs > 0 && Number.isFinite(computeMs), `computeMs ${computeMs}`);
    sequence.release();
  });
});
