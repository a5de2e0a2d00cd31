// Continuous batching: requests join and leave a running batch between decode steps (tiny V1 checkpoint).
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { ContinuousBatch, generate, type GenerationRequest } from '../../src/engine/generate.js';
import type { ForwardInput, ForwardOptions } from '../../src/engine/native-binding.js';
import { NativeModel, type ForwardStep } from '../../src/engine/native-model.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const FIRST: GenerationRequest = { promptIds: [0, 3000, 3001, 3002], maxNewTokens: 60, stopAtEos: false };
const SECOND: GenerationRequest = { promptIds: [0, 42, 4242, 424, 2, 9000, 77], maxNewTokens: 25, stopAtEos: false };
const THIRD: GenerationRequest = { promptIds: [0, 128815, 201, 21842], maxNewTokens: 10, stopAtEos: false };

/** The request, calling `onToken(n)` as its n-th token (1-based) is generated. */
function counting(request: GenerationRequest, onToken: (n: number) => void): GenerationRequest {
  let n = 0;
  const text = {
    push: () => {
      onToken(++n);
      return '';
    },
    flush: () => '',
  };
  return { ...request, stream: { text, onText: () => undefined } };
}

/**
 * A CPU decoder without weights whose forward calls `step` answers; it advances each sequence by
 * the tokens fed. What the memory admission reads says its KV caches are a few bytes.
 */
function fakeCpuModel(vocab: number, step: (inputs: ForwardInput[], options: ForwardOptions) => Promise<ForwardStep>): NativeModel {
  const model = {
    vocab,
    config: { eosId: 1, decoder: { layers: 1, kvHeads: 1, headDim: 2, maxPositions: 4096, slidingWindow: 0 } },
    kvCache: 'f16',
    deviceMemory: null,
    backend: 'cpu-fake',
    device: { backend: 'cpu' },
    promptChunkTokens: 24,
    createSequence: () => ({ length: 0, prefixLength: -1, cacheBytes: 0, release: () => undefined }),
    step: async (inputs: ForwardInput[], options: ForwardOptions = {}): Promise<ForwardStep> => {
      const answer = await step(inputs, options);
      for (const input of inputs) (input.sequence as { length: number }).length += input.ids.length;
      return answer;
    },
  };
  return model as unknown as NativeModel;
}

describe('continuous batching', () => {
  let model: NativeModel;
  const alone = new Map<GenerationRequest, number[]>();

  before(async () => {
    model = await NativeModel.load(await tinyCheckpoint('v1'));
    for (const request of [FIRST, SECOND, THIRD]) alone.set(request, (await generate(model, [request]))[0].ids);
  });

  test('a request that joins a running batch gets the same ids as decoded alone, and so does the running one', async () => {
    const batch = new ContinuousBatch(model, 4);
    let joinedAt = -1;
    let second: Promise<{ ids: number[] }> | undefined;
    let overlapped = false;
    const first = batch.generate(
      counting(FIRST, (n) => {
        if (n === 10) {
          joinedAt = n;
          second = batch.generate(SECOND);
        }
        if (n > 12 && batch.size.active === 2) overlapped = true;
      }),
    );
    const firstResult = await first;
    assert.equal(joinedAt, 10);
    assert.ok(overlapped, 'the second request never decoded beside the first');
    assert.deepEqual(firstResult.ids, alone.get(FIRST));
    assert.deepEqual((await second!).ids, alone.get(SECOND));
  });

  test('beyond maxSequences a request waits for a place and starts when one leaves', async () => {
    const batch = new ContinuousBatch(model, 2);
    const events: string[] = [];
    const runs = [
      batch.generate(counting(THIRD, (n) => n === THIRD.maxNewTokens && events.push('short done'))),
      batch.generate(counting(FIRST, () => undefined)),
      batch.generate(counting(SECOND, (n) => n === 1 && events.push('waiting started'))),
    ];
    const results = await Promise.all(runs);
    assert.deepEqual(events, ['short done', 'waiting started']);
    assert.deepEqual(results.map((r) => r.ids), [alone.get(THIRD), alone.get(FIRST), alone.get(SECOND)]);
  });

  test('an aborted request leaves the batch with its reason; the others finish unchanged', async () => {
    const batch = new ContinuousBatch(model, 4);
    const controller = new AbortController();
    const aborted = batch.generate(
      counting(FIRST, (n) => n === 5 && controller.abort(new Error('page timed out'))),
      { signal: controller.signal },
    );
    const other = batch.generate(SECOND);
    await assert.rejects(aborted, /page timed out/);
    assert.deepEqual((await other).ids, alone.get(SECOND));
    assert.deepEqual(batch.size, { active: 0, waiting: 0 });
  });

  test('a request whose deadline passes while it decodes keeps its ids with finish "timeout"; the others finish unchanged', async () => {
    const batch = new ContinuousBatch(model, 4);
    const deadline = new AbortController();
    const stopped = batch.generate(
      counting(FIRST, (n) => n === 5 && deadline.abort(new Error('page timed out'))),
      { deadline: deadline.signal },
    );
    const other = batch.generate(SECOND);
    const result = await stopped;
    assert.equal(result.finish, 'timeout');
    assert.deepEqual(result.ids, alone.get(FIRST)!.slice(0, 5), 'the ids up to the deadline, as decoded alone');
    assert.deepEqual((await other).ids, alone.get(SECOND));
    assert.deepEqual(batch.size, { active: 0, waiting: 0 });
  });

  test('a request whose deadline passed before it joined the batch read nothing: it rejects with the reason', async () => {
    const batch = new ContinuousBatch(model, 1);
    const deadline = new AbortController();
    const running = batch.generate(counting(FIRST, (n) => n === 2 && deadline.abort(new Error('page timed out'))));
    const waiting = batch.generate(SECOND, { deadline: deadline.signal });
    await assert.rejects(waiting, /page timed out/);
    assert.deepEqual((await running).ids, alone.get(FIRST));
  });

  test('a request with a prompt outside the vocabulary is refused before it joins', () => {
    const batch = new ContinuousBatch(model, 2);
    assert.throws(() => batch.generate({ promptIds: [0, 129280], maxNewTokens: 1 }), /outside \[0, 129280\)/);
    assert.deepEqual(batch.size, { active: 0, waiting: 0 });
  });
});

describe('a forward call that fails', () => {
  /** A decoder whose forward call rejects whenever it holds the prompt id POISON; it records each call's batch size. */
  const POISON = 666;
  function poisonedModel(batchSizes: number[]): NativeModel {
    return fakeCpuModel(1000, async (inputs) => {
      batchSizes.push(inputs.length);
      if (inputs.some((input) => input.ids.includes(POISON))) throw new Error('this decoder rejects the poison id');
      return { outputs: inputs.map(() => ({ best: 7, logprob: -0.5 })), computeMs: 1 };
    });
  }

  test('is retried one sequence at a time, so only the sequence that fails is failed', async () => {
    const batchSizes: number[] = [];
    const batch = new ContinuousBatch(poisonedModel(batchSizes), 3);
    const requests = [[0, 5], [0, POISON], [0, 6]].map((promptIds) => batch.generate({ promptIds, maxNewTokens: 2, stopAtEos: false }));
    const outcomes = await Promise.allSettled(requests);
    assert.deepEqual(
      outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value.ids : (outcome.reason as Error).message)),
      [[7, 7], 'this decoder rejects the poison id', [7, 7]],
    );
    // The three shared a call before the failure split them.
    assert.ok(batchSizes.includes(3), `batch sizes ${batchSizes.join(', ')}`);
  });
});

describe('pages joining a busy batch (join-budget.ts)', () => {
  const DECODE_MS = 100;
  const PROMPT_TOKEN_MS = 2;
  interface Call {
    inputs: ForwardInput[];
    encodeMs: number | undefined;
  }
  /** A CPU decoder whose steps take DECODE_MS with a decoding row, plus PROMPT_TOKEN_MS per prompt token. */
  function timedModel(calls: Call[]): NativeModel {
    return fakeCpuModel(100000, async (inputs, options) => {
      calls.push({ inputs, encodeMs: options.encodeMs });
      const promptTokens = inputs.reduce((sum, input) => sum + (input.promptTokens === undefined ? 0 : input.ids.length), 0);
      const decoding = inputs.some((input) => input.promptTokens === undefined);
      return { outputs: inputs.map(() => ({ best: 7, logprob: -0.5 })), computeMs: (decoding ? DECODE_MS : 0) + promptTokens * PROMPT_TOKEN_MS };
    });
  }

  test('reads a page in chunks within the share while the batch is full, whole and encodes first while a place is free', async () => {
    const calls: Call[] = [];
    const batch = new ContinuousBatch(timedModel(calls), 2);
    const hidden = 3;
    const rows = Int32Array.from({ length: 80 }, (_, i) => 10 + i);
    const values = Float32Array.from({ length: rows.length * hidden }, (_, i) => i);
    const joining: GenerationRequest = { promptIds: Array.from({ length: 100 }, (_, i) => 1000 + i), embeds: { rows, values }, maxNewTokens: 5, stopAtEos: false };
    let second: Promise<unknown> | undefined;
    const first = batch.generate(counting({ promptIds: [0, 5, 6, 7, 8, 9, 10, 11, 12, 13], maxNewTokens: 30, stopAtEos: false }, (n) => {
      if (n === 3) second = batch.generate(joining);
    }));
    assert.deepEqual((await first).ids, Array(30).fill(7));
    assert.deepEqual(((await second!) as { ids: number[] }).ids, Array(5).fill(7));

    const joiningCalls = calls.filter((call) => call.inputs.some((input) => input.ids[0] >= 1000 && input.promptTokens !== undefined));
    // Alone with a free place, the first page read its prompt in one call and left encodes no limit.
    assert.equal(calls[0].inputs[0].ids.length, 10);
    assert.ok(calls.slice(0, 3).every((call) => call.encodeMs === Infinity));
    // Joining a full batch: a plain step takes 100 ms and a prompt token 2 ms, so each step grants
    // 0.25 × 100 = 25 ms: one chunk of 24 tokens at least (a prompt always advances).
    const chunks = joiningCalls.map((call) => call.inputs.find((input) => input.promptTokens !== undefined)!);
    assert.deepEqual(chunks.map((chunk) => chunk.ids.length), [24, 24, 24, 24, 4]);
    assert.deepEqual(chunks.flatMap((chunk) => [...chunk.ids]), joining.promptIds);
    assert.ok(chunks.every((chunk) => chunk.promptTokens === 100));
    // Encodes get what a step's chunk leaves of the 25 ms: nothing, and 25 − 4 × 2 after the last.
    assert.deepEqual(joiningCalls.map((call) => call.encodeMs), [0, 0, 0, 0, 17]);
    // The image rows came in the chunks that hold them, counted from each chunk's start.
    let start = 0;
    const seenRows: number[] = [];
    const seenValues: number[] = [];
    for (const chunk of chunks) {
      seenRows.push(...[...chunk.embedRows!].map((row) => row + start));
      seenValues.push(...chunk.embeds!);
      start += chunk.ids.length;
    }
    assert.deepEqual(seenRows, [...rows]);
    assert.deepEqual(seenValues, [...values]);
    // Both decoding, every place taken: the encodes of pages to come get the whole 25 ms.
    const after = calls.indexOf(joiningCalls[joiningCalls.length - 1]) + 1;
    assert.equal(calls[after].encodeMs, 0.25 * DECODE_MS);
  });
});
