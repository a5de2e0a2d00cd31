// Self-tests of the reference decoder (test/reference/): its numeric helpers against hand-computed values,
// its safetensors reader, and its cached / R-SWA decoding against from-scratch recomputation on a synthetic
// checkpoint. None of this needs the native engine.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ReferenceDecoder, type Visibility } from './reference-decoder.js';
import { greedyReference, slidingNoRepeatNgramBans } from './reference-generate.js';
import { argmax, attend, logSoftmaxAt, rmsNorm, rope, routeToExperts, softmax, topK } from './reference-math.js';
import { SafetensorsCheckpoint } from './safetensors-reader.js';
import { tinyDecoderConfig, writeSafetensors, writeTinyCheckpoint } from './write-tiny-checkpoint.js';

const workDir = mkdtempSync(join(tmpdir(), 'reference-decoder-'));
after(() => rmSync(workDir, { recursive: true, force: true }));

/** max |actual − expected| / max |expected| over two equally long vectors. */
function relativeDifference(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  assert.equal(actual.length, expected.length);
  let difference = 0;
  let scale = 0;
  for (let i = 0; i < expected.length; i++) {
    difference = Math.max(difference, Math.abs(actual[i] - expected[i]));
    scale = Math.max(scale, Math.abs(expected[i]));
  }
  return difference / scale;
}

function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance = 1e-15): void {
  assert.equal(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= tolerance, `[${i}]: ${actual[i]} vs ${expected[i]}`);
  }
}

describe('reference math', () => {
  test('rmsNorm divides by the root mean square and multiplies by the weight', () => {
    // mean(1², 7²) = 25 → rms 5
    assertClose(rmsNorm(Float64Array.of(1, 7), Float32Array.of(1, 2), 0), [0.2, 2.8]);
  });

  test('rmsNorm adds eps to the mean square', () => {
    // sqrt(25 + 24) = 7
    assertClose(rmsNorm(Float64Array.of(1, 7), Float32Array.of(1, 2), 24), [1 / 7, 2]);
  });

  test('rope at position 0 is the identity', () => {
    assertClose(rope(Float64Array.of(1, 2, 3, 4), 4, 0, 10000), [1, 2, 3, 4]);
  });

  test('rope rotates (x[i], x[i+d/2]) of every head by p·theta^(−2i/d)', () => {
    // head_dim 4, theta 100: inv_freq = [1, 0.1]; position 5 → angles 5 and 0.5
    const head = [
      1 * Math.cos(5) - 3 * Math.sin(5),
      2 * Math.cos(0.5) - 4 * Math.sin(0.5),
      3 * Math.cos(5) + 1 * Math.sin(5),
      4 * Math.cos(0.5) + 2 * Math.sin(0.5),
    ];
    assertClose(rope(Float64Array.of(1, 2, 3, 4, 1, 2, 3, 4), 4, 5, 100), [...head, ...head]);
  });

  test('softmax normalises exponentials and survives large inputs', () => {
    assertClose(softmax([0, Math.log(3)]), [0.25, 0.75]);
    assertClose(softmax([1000, 1000, 1000, 1000]), [0.25, 0.25, 0.25, 0.25]);
  });

  test('logSoftmaxAt is the log of the softmax, and survives large inputs', () => {
    assert.ok(Math.abs(logSoftmaxAt([0, Math.log(3)], 1) - Math.log(0.75)) < 1e-15);
    assert.ok(Math.abs(logSoftmaxAt([1000, 1000, 1000, 1000], 2) - Math.log(0.25)) < 1e-15);
  });

  test('argmax and topK take the lower index first on ties', () => {
    assert.equal(argmax([1, 3, 3, 2]), 1);
    assert.deepEqual(topK([1, 3, 3, 2], 3), [1, 2, 3]);
  });

  test('attention weights values by softmax(q·k/√d)', () => {
    // one head, d = 2: scores [1/√2, 0]
    const p = Math.exp(Math.SQRT1_2) / (Math.exp(Math.SQRT1_2) + 1);
    const keys = [Float64Array.of(1, 0), Float64Array.of(0, 0)];
    const values = [Float64Array.of(2, 0), Float64Array.of(4, 1)];
    assertClose(attend(Float64Array.of(1, 0), keys, values, [0, 1], 1, 1, 2), [2 * p + 4 * (1 - p), 1 - p]);
    assertClose(attend(Float64Array.of(1, 0), keys, values, [1], 1, 1, 2), [4, 1]);
  });

  test('MoE routing without norm_topk_prob keeps the raw scores, summing below one', () => {
    // softmax(ln 1, ln 2, ln 3, ln 4) = [0.1, 0.2, 0.3, 0.4]
    const route = routeToExperts(Float64Array.from([1, 2, 3, 4], Math.log), 2, 1.0, false);
    assert.deepEqual(route.experts, [3, 2]);
    assertClose(route.weights, [0.4, 0.3]);
    assert.ok(route.weights[0] + route.weights[1] < 1);
  });

  test('MoE routing scales by routed_scaling_factor, or renormalises with norm_topk_prob', () => {
    const logits = Float64Array.from([1, 2, 3, 4], Math.log);
    assertClose(routeToExperts(logits, 2, 2.5, false).weights, [1.0, 0.75]);
    assertClose(routeToExperts(logits, 2, 1.0, true).weights, [4 / 7, 3 / 7]);
  });
});

describe('safetensors reader', () => {
  test('converts BF16, F16 and F32 to float32 exactly', () => {
    const dir = join(workDir, 'dtypes');
    mkdirSync(dir);
    const u16 = (...bits: number[]) => new Uint8Array(Uint16Array.from(bits).buffer);
    writeSafetensors(join(dir, 'model.safetensors'), [
      { name: 'bf16', dtype: 'BF16', shape: [2, 2], bytes: u16(0x3f80, 0xc040, 0x3eab, 0x0001) },
      { name: 'f16', dtype: 'F16', shape: [5], bytes: u16(0x3c00, 0xc500, 0x0001, 0x7bff, 0xfc00) },
      { name: 'f32', dtype: 'F32', shape: [3], bytes: new Uint8Array(Float32Array.of(1.5, -2.25, 2 ** -149).buffer) },
    ]);
    const checkpoint = SafetensorsCheckpoint.open(dir);
    const bf16 = checkpoint.tensor('bf16');
    assert.deepEqual(bf16.shape, [2, 2]);
    assert.deepEqual([...bf16.data], [1, -3, 0.333984375, 2 ** -133]);
    assert.deepEqual([...checkpoint.tensor('f16').data], [1, -5, 2 ** -24, 65504, -Infinity]);
    assert.deepEqual([...checkpoint.tensor('f32').data], [1.5, -2.25, 2 ** -149]);
  });
});

describe('reference decoder on a synthetic checkpoint', () => {
  const window = 4;
  const prompt = [3, 14, 15, 9, 26, 5]; // longer than the window
  const causal: Visibility = (query, key) => key <= query;
  /** The R-SWA rule as docs/model.md §8.2 states it, for prefill length L and window W. */
  const rswa =
    (L: number, W: number): Visibility =>
    (query, key) =>
      key <= query && (query < L || key < L || key >= Math.max(L, query - W + 1));
  let v1: ReferenceDecoder;
  let v3: ReferenceDecoder;
  let v1Dir: string;

  before(() => {
    v1Dir = join(workDir, 'v1');
    const v3Dir = join(workDir, 'v3');
    const v3Config = tinyDecoderConfig({
      architectures: ['UnlimitedOCRForCausalLM'],
      model_type: 'unlimited-ocr',
      sliding_window_size: window,
    });
    writeTinyCheckpoint(v1Dir, tinyDecoderConfig(), 7);
    writeTinyCheckpoint(v3Dir, v3Config, 7);
    v1 = ReferenceDecoder.load(v1Dir);
    v3 = ReferenceDecoder.load(v3Dir);
  });

  test('reads the V3 sliding window from config.json, and none for V1', () => {
    assert.equal(v3.config.slidingWindow, window);
    assert.equal(v1.config.slidingWindow, null);
    assert.equal(v1.vocabSize, 50);
  });

  test('KV-cached decode equals recomputing the whole sequence each step (full causal)', () => {
    const sequence = v1.newSequence();
    const ids = [...prompt];
    let logits = sequence.forward(ids);
    for (let step = 0; step < 10; step++) {
      assert.ok(relativeDifference(logits, v1.logitsFromScratch(ids, causal)) <= 1e-12, `step ${step}`);
      ids.push(argmax(logits));
      logits = sequence.forward([ids[ids.length - 1]]);
    }
  });

  test('V3 decode sees the whole prefix plus the W most recent generated tokens', () => {
    const sequence = v3.newSequence();
    const ids = [...prompt];
    let logits = sequence.forward(ids);
    for (let step = 0; step < 3 * window; step++) {
      const expected = v3.logitsFromScratch(ids, rswa(prompt.length, window));
      assert.ok(relativeDifference(logits, expected) <= 1e-12, `step ${step}`);
      ids.push(argmax(logits));
      logits = sequence.forward([ids[ids.length - 1]]);
    }
  });

  test('V3 prefill is plain causal attention even when longer than the window', () => {
    assert.deepEqual(v3.newSequence().forward(prompt), v1.newSequence().forward(prompt));
  });

  test('V3 equals V1 while W generated tokens are fed, and differs once the window drops one (decode W+1)', () => {
    const steps = window + 3;
    const full = greedyReference(v1, prompt, steps, { keepStepLogits: true });
    const windowed = greedyReference(v3, prompt, steps, { keepStepLogits: true, forceIds: full.ids });
    const v1Logits = full.stepLogits!;
    const v3Logits = windowed.stepLogits!;
    // stepLogits[k] (k ≥ 1) come from the decode call that fed the k-th generated token
    for (let k = 0; k <= window; k++) assert.ok(relativeDifference(v3Logits[k], v1Logits[k]) <= 1e-12, `decode ${k}`);
    for (let k = window + 1; k < steps; k++) assert.ok(relativeDifference(v3Logits[k], v1Logits[k]) > 1e-6, `decode ${k}`);
  });

  test('embedding overrides replace the rows at their offsets instead of adding to them', () => {
    const embeddings = SafetensorsCheckpoint.open(v1Dir).tensor('model.embed_tokens.weight').data;
    const hidden = v1.config.hiddenSize;
    const rows = new Float32Array(2 * hidden);
    rows.set(embeddings.subarray(40 * hidden, 41 * hidden), 0);
    rows.set(embeddings.subarray(41 * hidden, 42 * hidden), hidden);
    const overridden = v1.newSequence().forward([3, 14, 15, 9], { positions: [1, 3], rows });
    assert.deepEqual(overridden, v1.newSequence().forward([3, 40, 15, 41]));
  });

  test('norm_topk_prob from config.json changes the MoE output', () => {
    const dir = join(workDir, 'norm-topk');
    writeTinyCheckpoint(dir, tinyDecoderConfig({ norm_topk_prob: true }), 7);
    const normalised = ReferenceDecoder.load(dir).newSequence().forward(prompt);
    assert.ok(relativeDifference(normalised, v1.newSequence().forward(prompt)) > 1e-6);
  });

  test('after the prefill, forward() accepts exactly one token', () => {
    const sequence = v1.newSequence();
    sequence.forward(prompt);
    assert.throws(() => sequence.forward([1, 2]), /exactly one token/);
    assert.equal(sequence.length, prompt.length);
  });

  test('greedyReference returns exactly `steps` argmax ids with their top-k and log-probabilities', () => {
    const result = greedyReference(v1, prompt, 7, { topk: 3, keepStepLogits: true });
    assert.equal(result.ids.length, 7);
    result.topk.forEach((best, step) => {
      assert.equal(best.ids[0], result.ids[step]);
      assert.ok(best.logits[0] >= best.logits[1] && best.logits[1] >= best.logits[2]);
      assert.equal(result.logprobs[step], logSoftmaxAt(result.stepLogits![step], result.ids[step]));
    });
    assert.equal(greedyReference(v1, prompt, 2).stepLogits, undefined);
  });

  test('teacher forcing feeds forceIds but reports the argmax of every step', () => {
    const forced = greedyReference(v1, prompt, 3, { forceIds: [0, 1] });
    const sequence = v1.newSequence();
    const expected = [argmax(sequence.forward(prompt)), argmax(sequence.forward([0])), argmax(sequence.forward([1]))];
    assert.deepEqual(forced.ids, expected);
  });
});

describe('sliding-window no-repeat-n-gram bans (§10.2)', () => {
  const none = new Set<number>();

  test('bans nothing while the sequence is shorter than n', () => {
    assert.deepEqual(slidingNoRepeatNgramBans([1, 2], 3, 100, none), new Set());
  });

  test('bans the token that followed each earlier occurrence of the last n−1 tokens', () => {
    assert.deepEqual(slidingNoRepeatNgramBans([1, 2, 3, 1, 2], 3, 100, none), new Set([3]));
    assert.deepEqual(slidingNoRepeatNgramBans([1, 2, 3, 1, 2, 4, 1, 2], 3, 100, none), new Set([3, 4]));
  });

  test('a sequence of exactly n tokens can ban its own last token', () => {
    assert.deepEqual(slidingNoRepeatNgramBans([5, 5, 5], 3, 100, none), new Set([5]));
    assert.deepEqual(slidingNoRepeatNgramBans([5, 6, 5], 3, 100, none), new Set());
  });

  test('whitelisted ids are never banned', () => {
    assert.deepEqual(slidingNoRepeatNgramBans([1, 2, 3, 1, 2, 4, 1, 2], 3, 100, new Set([4])), new Set([3]));
  });

  test('only n-grams starting at or after len − window count', () => {
    const tokens = [1, 2, 3, 1, 2, 4, 1, 2]; // occurrences of (1, 2) start at 0, 3 and 6
    assert.deepEqual(slidingNoRepeatNgramBans(tokens, 3, 8, none), new Set([3, 4])); // starts 0…5
    assert.deepEqual(slidingNoRepeatNgramBans(tokens, 3, 7, none), new Set([4])); // starts 1…5
    assert.deepEqual(slidingNoRepeatNgramBans(tokens, 3, 5, none), new Set([4])); // starts 3…5
    assert.deepEqual(slidingNoRepeatNgramBans(tokens, 3, 4, none), new Set()); // starts 4…5
  });

  test('n = 1 bans every token in the window', () => {
    assert.deepEqual(slidingNoRepeatNgramBans([4, 9, 4, 7], 1, 3, none), new Set([9, 4, 7]));
  });
});
