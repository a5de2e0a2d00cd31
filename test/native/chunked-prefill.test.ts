// A prompt read in several forward calls (a prefill in chunks, as a continuous batch feeds a page
// that joins a busy batch) leaves the sequence exactly as one call would: bitwise the same logits at
// the prompt's end and at every decode step after it, image embeddings included, for full attention
// (V1) and for R-SWA (V3), whose prefix is the whole prompt the first call names.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { NativeModel } from '../../src/engine/native-model.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const PROMPT = Int32Array.from({ length: 80 }, (_, i) => (i === 0 ? 0 : 1000 + ((i * 7919) % 90000)));
const IMAGE_ROWS = Int32Array.from({ length: 60 }, (_, i) => 5 + i);
const CHUNK = 24; // the model's promptChunkTokens, checked below
const CHUNKS = [CHUNK, 3 * CHUNK, PROMPT.length]; // where each call ends: the image rows straddle both boundaries
const DECODE_STEPS = 150; // past V3's window of 128 generated tokens

function imageEmbeds(hidden: number): Float32Array {
  return Float32Array.from({ length: IMAGE_ROWS.length * hidden }, (_, i) => Math.sin(i * 0.37) * 0.05);
}

/** The prompt's logits and those of DECODE_STEPS forced steps after it, the prompt fed in the given chunks. */
async function run(model: NativeModel, chunkEnds: number[]): Promise<{ logits: Float32Array[]; prefix: number }> {
  const hidden = model.config.decoder.hidden;
  const embeds = imageEmbeds(hidden);
  const sequence = model.createSequence();
  let start = 0;
  let last: Float32Array | undefined;
  for (const end of chunkEnds) {
    const picked = [...IMAGE_ROWS.keys()].filter((i) => IMAGE_ROWS[i] >= start && IMAGE_ROWS[i] < end);
    const values = new Float32Array(picked.length * hidden);
    picked.forEach((i, k) => values.set(embeds.subarray(i * hidden, (i + 1) * hidden), k * hidden));
    const [output] = await model.forward([
      {
        sequence,
        ids: PROMPT.subarray(start, end),
        embeds: values,
        embedRows: Int32Array.from(picked, (i) => IMAGE_ROWS[i] - start),
        promptTokens: chunkEnds.length > 1 ? PROMPT.length : undefined,
      },
    ]);
    last = output.logits;
    start = end;
  }
  const logits = [Float32Array.from(last!)];
  for (let step = 0; step < DECODE_STEPS; step++) {
    const [output] = await model.forward([{ sequence, ids: Int32Array.of(3000 + ((step * 104729) % 50000)) }]);
    logits.push(Float32Array.from(output.logits!));
  }
  const prefix = sequence.prefixLength;
  sequence.release();
  return { logits, prefix };
}

for (const variant of ['v1', 'v3'] as const) {
  describe(`a prompt read in chunks (${variant})`, () => {
    test('gives bitwise the logits of the prompt read at once, at its end and at every step after', async () => {
      const model = await NativeModel.load(await tinyCheckpoint(variant));
      assert.equal(model.promptChunkTokens, CHUNK);
      const whole = await run(model, [PROMPT.length]);
      const chunked = await run(model, CHUNKS);
      assert.equal(chunked.prefix, PROMPT.length);
      assert.equal(whole.prefix, PROMPT.length);
      for (let step = 0; step <= DECODE_STEPS; step++) assert.deepEqual(chunked.logits[step], whole.logits[step], `step ${step}`);
    });
  });
}

describe('the rules of a prompt in chunks', () => {
  test('with a sliding window, a first call cannot hold more tokens than the prompt it names', async () => {
    const model = await NativeModel.load(await tinyCheckpoint('v3'));
    const sequence = model.createSequence();
    await assert.rejects(model.forward([{ sequence, ids: PROMPT.subarray(0, 5), promptTokens: 3 }]), /a prompt of 3 tokens cannot start with 5/);
  });

  test('with full attention, tokens past the prompt in one call (a preempted sequence reading again) get bitwise the logits of decode steps', async () => {
    const model = await NativeModel.load(await tinyCheckpoint('v1'));
    // The rest of PROMPT plays the generated tokens. The first call of 50 holds the block [24, 48)
    // past the prompt's end: it must attend row by row, as the decode steps did, not as a block.
    const promptTokens = 30;
    const stepwise = model.createSequence();
    await model.forward([{ sequence: stepwise, ids: PROMPT.subarray(0, promptTokens) }]);
    let last: Float32Array | undefined;
    for (let i = promptTokens; i < PROMPT.length; i++) last = (await model.forward([{ sequence: stepwise, ids: PROMPT.subarray(i, i + 1) }]))[0].logits;
    const again = model.createSequence();
    await model.forward([{ sequence: again, ids: PROMPT.subarray(0, 50), promptTokens }]);
    const [output] = await model.forward([{ sequence: again, ids: PROMPT.subarray(50) }]);
    assert.equal(again.prefixLength, promptTokens);
    assert.deepEqual(output.logits, last);
  });

  test('with a sliding window, several tokens in a call are refused once the prompt is read', async () => {
    const model = await NativeModel.load(await tinyCheckpoint('v3'));
    const sequence = model.createSequence();
    await model.forward([{ sequence, ids: PROMPT.subarray(0, 10), promptTokens: 12 }]);
    await assert.rejects(model.forward([{ sequence, ids: PROMPT.subarray(10, 13) }]), /calls after the prompt take one token each/);
    await model.forward([{ sequence, ids: PROMPT.subarray(10, 12) }]);
    assert.equal(sequence.prefixLength, 12);
    await assert.rejects(model.forward([{ sequence, ids: PROMPT.subarray(0, 2) }]), /calls after the prompt take one token each/);
  });
});
