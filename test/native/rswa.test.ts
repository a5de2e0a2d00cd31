// V3's R-SWA against V1's full attention on identical weights (tiny V1 and V3 checkpoints of one
// seed differ only in config.json): teacher-forced on the same ids, the logits are identical until
// the window first drops a generated token (step 129, counting the prefill position as step 0) and
// differ from then on; the V3 cache stops growing at prefix + 128 rows.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { generate, type GenerationResult } from '../../src/engine/generate.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const WINDOW = 128;
const STEPS = 300;
const PROMPT = [0, 5000, 6000, 7000, 8000, 9000, 10000];
const FORCED = Array.from({ length: STEPS }, (_, i) => 2000 + ((i * 104729) % 100000));

describe('R-SWA decode (V3) compared with full attention (V1)', () => {
  let v1: GenerationResult;
  let v3: GenerationResult;
  let v3Decoder: NativeModel;

  before(async () => {
    const v1Decoder = await NativeModel.load(await tinyCheckpoint('v1'));
    v3Decoder = await NativeModel.load(await tinyCheckpoint('v3'));
    assert.equal(v3Decoder.config.decoder.slidingWindow, WINDOW);
    const request = { promptIds: PROMPT, maxNewTokens: STEPS, forceIds: FORCED, recordTopK: 8 };
    [v1] = await generate(v1Decoder, [request]);
    [v3] = await generate(v3Decoder, [request]);
  });

  test('steps 0..128 see exactly what full attention sees', () => {
    for (let step = 0; step <= WINDOW; step++) {
      assert.deepEqual(v3.topk[step].logits, v1.topk[step].logits, `step ${step}`);
    }
  });

  test('from step 129 on the window has dropped tokens and the logits differ', () => {
    for (let step = WINDOW + 1; step < STEPS; step++) {
      assert.notDeepEqual(v3.topk[step].logits, v1.topk[step].logits, `step ${step}`);
    }
  });

  test('the V3 cache holds prefix + 128 rows however long the generation', async () => {
    const sequence = v3Decoder.createSequence();
    const dims = v3Decoder.config.decoder;
    await v3Decoder.forward([{ sequence, ids: Int32Array.from(PROMPT) }]);
    for (let i = 0; i < 400; i++) await v3Decoder.forward([{ sequence, ids: Int32Array.of(3000 + i) }]);
    assert.equal(sequence.length, PROMPT.length + 400);
    const rowBytes = 2 * dims.layers * dims.kvHeads * dims.headDim * 2; // keys and values in IEEE half
    assert.equal(sequence.cacheBytes, (PROMPT.length + WINDOW) * rowBytes);
    sequence.release();
  });
});
