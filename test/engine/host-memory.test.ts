// The CPU engine's memory budget: a page joins the continuous batch only while the bound of its KV
// cache fits what the process may still hold (tiny V1 checkpoint; SCRIPTORIUM_MEMORY_MB sets how much),
// counted with full attention for the tokens a page is planned to generate; and a page whose cache
// would outgrow the budget is preempted, then reads again with the same logits.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import {
  ACTIVATION_RESERVE_BYTES,
  HOST_MEMORY_CAP_VARIABLE,
  hostMemory,
  kvCacheBoundBytes,
  PLANNED_NEW_TOKENS,
} from '../../src/engine/device-memory.js';
import { ContinuousBatch, type BatchStep, type GenerationRequest, type GenerationResult } from '../../src/engine/generate.js';
import type { DeviceMemory, NativeSequence } from '../../src/engine/native-binding.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const MIB = 2 ** 20;
const PROMPT = [0, 3000, 3001, 3002, 3003];
const MAX_NEW_TOKENS = 8000;

/**
 * The model, seeing as its memory a budget of `budgetBytes` against its KV caches alone, counted
 * exactly (a released cache holds nothing); `sequences` are the caches it created.
 */
function withCacheBudget(model: NativeModel, budgetBytes: number): { model: NativeModel; sequences: NativeSequence[]; cacheBytes(): number } {
  const sequences: NativeSequence[] = [];
  const cacheBytes = () => sequences.reduce((sum, sequence) => sum + sequence.cacheBytes, 0);
  const budgeted = new Proxy(model, {
    get(target, property) {
      if (property === 'deviceMemory') return { budgetBytes, usedBytes: cacheBytes() } satisfies DeviceMemory;
      if (property === 'createSequence') {
        return () => {
          const sequence = target.createSequence();
          sequences.push(sequence);
          return sequence;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { model: budgeted, sequences, cacheBytes };
}

describe('host memory budget', () => {
  let model: NativeModel;
  /** A request whose cache may grow to MAX_NEW_TOKENS tokens but that stops at its first token, whatever it is. */
  let request: GenerationRequest;
  /** Its cache's bound as admission counts it: for PLANNED_NEW_TOKENS, not its limit. */
  let bound: number;

  before(async () => {
    model = await NativeModel.load(await tinyCheckpoint('v1'), { threads: 1 });
    request = { promptIds: PROMPT, maxNewTokens: MAX_NEW_TOKENS, stopIds: Array.from({ length: model.vocab }, (_, id) => id) };
    bound = kvCacheBoundBytes(model.config.decoder, model.kvCache, PROMPT.length, PLANNED_NEW_TOKENS);
    // Warm: the batch's first forward call grows the activation buffers once.
    await new ContinuousBatch(model, 2).generate(request);
  });
  after(() => {
    delete process.env[HOST_MEMORY_CAP_VARIABLE];
  });

  /**
   * Prompt tokens of the forward calls that prefilled, for a short request that starts a batch of
   * three and two requests offered while it runs (they can first join at its second step).
   */
  async function prefillsOfTwo(): Promise<number[]> {
    const steps: BatchStep[] = [];
    const batch = new ContinuousBatch(model, 3, { onStep: (step) => steps.push(step) });
    const running = batch.generate({ promptIds: PROMPT, maxNewTokens: 3, stopAtEos: false });
    await Promise.all([running, batch.generate(request), batch.generate(request)]);
    return steps.map((step) => step.prefillTokens).filter((tokens) => tokens > 0);
  }

  test('the budget is the cap less the activation reserve, against the resident set', () => {
    const memory = hostMemory({ [HOST_MEMORY_CAP_VARIABLE]: '4096' });
    assert.equal(memory.budgetBytes, 4096 * MIB - ACTIVATION_RESERVE_BYTES);
    assert.ok(Math.abs(memory.usedBytes - process.memoryUsage().rss) < 64 * MIB);
  });

  test('with room for both caches’ bounds, two pages join in one call', async () => {
    delete process.env[HOST_MEMORY_CAP_VARIABLE];
    assert.deepEqual(await prefillsOfTwo(), [PROMPT.length, 2 * PROMPT.length]);
  });

  test('with room for one planned bound beside a short page, the second page waits for the first to leave', async () => {
    process.env[HOST_MEMORY_CAP_VARIABLE] = String(Math.ceil((process.memoryUsage().rss + ACTIVATION_RESERVE_BYTES + 1.5 * bound) / MIB));
    assert.deepEqual(await prefillsOfTwo(), [PROMPT.length, PROMPT.length, PROMPT.length]);
  });

  test('a page whose planned bound can never fit fails at once with the numbers, and the batch goes on', async () => {
    process.env[HOST_MEMORY_CAP_VARIABLE] = String(Math.ceil((process.memoryUsage().rss + ACTIVATION_RESERVE_BYTES + 0.5 * bound) / MIB));
    await assert.rejects(
      new ContinuousBatch(model, 2).generate(request),
      /^Error: out of memory on cpu-\S+: the KV cache of 1005 tokens needs up to \d+\.\d MiB, and the \d+\.\d MiB budget leaves \d+\.\d MiB beside the weights and activations \(the memory this process may hold .*SCRIPTORIUM_MEMORY_MB\) less 2048\.0 MiB kept for activations\)$/,
    );
    delete process.env[HOST_MEMORY_CAP_VARIABLE];
    assert.equal((await new ContinuousBatch(model, 2).generate(request)).ids.length, 1);
  });
});

describe('preemption with full attention', () => {
  const LONG: GenerationRequest = { promptIds: PROMPT, maxNewTokens: 600, stopAtEos: false };
  const OTHER: GenerationRequest = { promptIds: [0, 42, 4242, 424, 2, 9000, 77], maxNewTokens: 600, stopAtEos: false, noRepeatNgram: { size: 3, window: 90 } };
  let model: NativeModel;
  const alone = new Map<GenerationRequest, GenerationResult>();

  before(async () => {
    model = await NativeModel.load(await tinyCheckpoint('v1'), { threads: 1 });
    for (const request of [LONG, OTHER]) alone.set(request, await new ContinuousBatch(model, 1).generate(request));
  });

  test('the newest page gives up its cache when both would grow past the budget, reads again, and decodes the same tokens with the same log-probabilities', async () => {
    // Room for both pages' planned bounds, so both join; both caches grow in the same step (261,
    // then 518, then 777 slots), and growing from 518 to 777 holds both buffers: that does not fit twice.
    const budget = kvCacheBoundBytes(model.config.decoder, model.kvCache, PROMPT.length, 600) + kvCacheBoundBytes(model.config.decoder, model.kvCache, OTHER.promptIds.length, 600);
    const budgeted = withCacheBudget(model, budget);
    const steps: BatchStep[] = [];
    const afterSteps: number[] = [];
    const batch = new ContinuousBatch(budgeted.model, 2, {
      onStep: (step) => {
        steps.push(step);
        afterSteps.push(budgeted.cacheBytes());
      },
    });
    const [long, other] = await Promise.all([batch.generate(LONG), batch.generate(OTHER)]);
    assert.equal(long.preemptions, 0);
    assert.equal(other.preemptions, 1, 'the page that joined last is the one preempted');
    assert.equal(steps.reduce((sum, step) => sum + step.preempted, 0), 1);
    assert.ok(Math.max(...afterSteps) <= budget, `the caches held ${Math.max(...afterSteps)} bytes against a budget of ${budget}`);
    for (const [result, request] of [[long, LONG], [other, OTHER]] as const) {
      assert.deepEqual(result.ids, alone.get(request)!.ids);
      assert.deepEqual(result.logprobs, alone.get(request)!.logprobs);
    }
    // It read again beside the page still decoding: one call fed the other's next id and the whole of what it had.
    assert.ok(steps.some((step) => step.decodeRows === 1 && step.prefillTokens > OTHER.promptIds.length));
  });

  test('a page alone whose cache cannot grow fails with the numbers', async () => {
    // Room for its planned bound, 1,508 slots. Its cache grows from 261 to 518, 777, then 1,165
    // slots, beside the 777 while they are copied: 1,942 slots, when its 778th token comes.
    const budgeted = withCacheBudget(model, kvCacheBoundBytes(model.config.decoder, model.kvCache, PROMPT.length, PLANNED_NEW_TOKENS));
    await assert.rejects(
      new ContinuousBatch(budgeted.model, 1).generate({ promptIds: PROMPT, maxNewTokens: 2000, stopAtEos: false }),
      /^Error: out of memory on cpu-\S+: the KV cache of 778 tokens needs up to \d+\.\d MiB, and the \d+\.\d MiB budget leaves \d+\.\d MiB /,
    );
    assert.equal(budgeted.sequences[0].cacheBytes, 0, 'its cache was released');
  });

  test('with a sliding window (V3), a page is counted for its whole limit, as its cache is bounded', async () => {
    const v3 = await NativeModel.load(await tinyCheckpoint('v3'), { threads: 1 });
    const limitBound = kvCacheBoundBytes(v3.config.decoder, v3.kvCache, PROMPT.length, MAX_NEW_TOKENS);
    const steps: BatchStep[] = [];
    const budgeted = withCacheBudget(v3, 1.5 * limitBound);
    const batch = new ContinuousBatch(budgeted.model, 3, { onStep: (step) => steps.push(step) });
    const running = batch.generate({ promptIds: PROMPT, maxNewTokens: 3, stopAtEos: false });
    const stopAtFirst = { promptIds: PROMPT, maxNewTokens: MAX_NEW_TOKENS, stopIds: Array.from({ length: v3.vocab }, (_, id) => id) };
    await Promise.all([running, batch.generate(stopAtFirst), batch.generate(stopAtFirst)]);
    assert.deepEqual(steps.map((step) => step.prefillTokens).filter((tokens) => tokens > 0), [PROMPT.length, PROMPT.length, PROMPT.length]);
  });
});
