// Batched generation on the native decoder (tiny V1 checkpoint, random weights).
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { generate } from '../../src/engine/generate.js';
import { logProbability } from '../../src/engine/logits-processors.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { Tokenizer } from '../../src/engine/tokenizer.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const PROMPTS = [
  [0, 3000, 3001, 3002],
  [0, 42, 4242, 424, 2, 9000, 77],
  [0, 128815, 128815, 128815, 201, 21842],
];

describe('generate', () => {
  let decoder: NativeModel;
  let tokenizer: Tokenizer;

  before(async () => {
    const dir = await tinyCheckpoint('v1');
    decoder = await NativeModel.load(dir);
    tokenizer = await Tokenizer.fromDir(dir);
  });

  test('sequences decoded together produce the same ids as each decoded alone', async () => {
    const together = await generate(
      decoder,
      PROMPTS.map((promptIds, i) => ({ promptIds, maxNewTokens: 20 + 10 * i, stopAtEos: false })),
    );
    for (const [i, promptIds] of PROMPTS.entries()) {
      const [alone] = await generate(decoder, [{ promptIds, maxNewTokens: 20 + 10 * i, stopAtEos: false }]);
      assert.deepEqual(together[i].ids, alone.ids, `prompt ${i}`);
    }
  });

  test('generation stops at a stop id and reports it', async () => {
    const [free] = await generate(decoder, [{ promptIds: PROMPTS[0], maxNewTokens: 30, stopAtEos: false }]);
    const stop = free.ids[12];
    const [stopped] = await generate(decoder, [{ promptIds: PROMPTS[0], maxNewTokens: 30, stopIds: [stop] }]);
    assert.equal(stopped.finish, 'eos');
    assert.deepEqual(stopped.ids, free.ids.slice(0, free.ids.indexOf(stop) + 1));
  });

  test('the token budget ends generation with finish "max_tokens"', async () => {
    const [result] = await generate(decoder, [{ promptIds: PROMPTS[1], maxNewTokens: 7, stopIds: [] }]);
    assert.equal(result.ids.length, 7);
    assert.equal(result.finish, 'max_tokens');
  });

  test('the no-repeat-n-gram blocker leaves no repeated 3-gram inside its window', async () => {
    const [result] = await generate(decoder, [
      { promptIds: PROMPTS[0], maxNewTokens: 120, stopIds: [], noRepeatNgram: { size: 3, window: 1000 } },
    ]);
    const seen = new Set<string>();
    for (let i = 0; i + 3 <= result.ids.length; i++) {
      const key = result.ids.slice(i, i + 3).join(',');
      assert.ok(!seen.has(key), `3-gram ${key} repeats at ${i}`);
      seen.add(key);
    }
  });

  test('streamed text concatenates to the decoded ids and never splits a character', async () => {
    const pieces: string[] = [];
    const [result] = await generate(decoder, [
      {
        promptIds: PROMPTS[2],
        maxNewTokens: 80,
        stopIds: [],
        stream: { text: tokenizer.streamDecoder(), onText: (piece) => pieces.push(piece) },
      },
    ]);
    assert.equal(pieces.join(''), tokenizer.decode(result.ids));
    for (const piece of pieces) assert.ok(!/[\uD800-\uDBFF]$/.test(piece), 'a piece ends inside a surrogate pair');
  });

  test('the streamed head returns the argmax of the logits, skipping banned ids, with its log-probability over every id', async () => {
    const [withLogits, streamed] = [decoder.createSequence(), decoder.createSequence()];
    try {
      const [full] = await decoder.forward([{ sequence: withLogits, ids: Int32Array.from(PROMPTS[1]) }]);
      const order = [...full.logits!.keys()].sort((a, b) => full.logits![b] - full.logits![a] || a - b);
      assert.equal(full.best, order[0]);
      assert.ok(Math.abs(full.logprob - logProbability(full.logits!, order[0])) <= 1e-5, `${full.logprob}`);
      const [best] = await decoder.forward([
        { sequence: streamed, ids: Int32Array.from(PROMPTS[1]), logits: false, banned: Int32Array.of(order[1], order[0]) },
      ]);
      assert.equal(best.best, order[2]);
      assert.equal(best.logits, undefined);
      // The banned ids keep their share of the probability: the model's, before the bans.
      const expected = logProbability(full.logits!, order[2]);
      assert.ok(Math.abs(best.logprob - expected) <= 1e-5, `log-probability ${best.logprob}, float64 ${expected}`);
    } finally {
      withLogits.release();
      streamed.release();
    }
  });

  test('generation on the streamed argmax picks the same ids as on full logits, n-gram bans included', async () => {
    const request = { promptIds: PROMPTS[0], maxNewTokens: 120, stopIds: [], noRepeatNgram: { size: 3, window: 1000 } };
    const [streamed] = await generate(decoder, [request]);
    const [onLogits] = await generate(decoder, [{ ...request, recordTopK: 1 }]);
    const [unbanned] = await generate(decoder, [{ ...request, noRepeatNgram: undefined }]);
    assert.deepEqual(streamed.ids, onLogits.ids);
    assert.notDeepEqual(streamed.ids, unbanned.ids, 'the bans never changed a token: the test proves nothing');
  });

  test('every generated id has its log-probability, the same on the streamed head as from full logits', async () => {
    const request = { promptIds: PROMPTS[2], maxNewTokens: 40, stopIds: [], noRepeatNgram: { size: 3, window: 1000 } };
    const [streamed] = await generate(decoder, [request]);
    const [onLogits] = await generate(decoder, [{ ...request, recordTopK: 1 }]);
    assert.equal(streamed.logprobs.length, streamed.ids.length);
    assert.deepEqual(streamed.ids, onLogits.ids);
    streamed.logprobs.forEach((logprob, i) => {
      assert.ok(logprob <= 0, `step ${i}: ${logprob}`);
      assert.ok(Math.abs(logprob - onLogits.logprobs[i]) <= 1e-5, `step ${i}: ${logprob} against ${onLogits.logprobs[i]}`);
    });
  });

  test('a prompt id outside the vocabulary is rejected before any work', async () => {
    await assert.rejects(generate(decoder, [{ promptIds: [0, 129280], maxNewTokens: 1 }]), /outside \[0, 129280\)/);
  });
});
