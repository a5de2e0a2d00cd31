// The CPU engine's memory budget: a page joins the continuous batch only while the bound of its KV
// cache fits what the process may still hold (tiny V1 checkpoint; SCRIPTORIUM_MEMORY_MB sets how much).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { ACTIVATION_RESERVE_BYTES, HOST_MEMORY_CAP_VARIABLE, hostMemory, kvCacheBoundBytes } from '../../src/engine/device-memory.js';
import { ContinuousBatch, type BatchStep, type GenerationRequest } from '../../src/engine/generate.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const MIB = 2 ** 20;
const PROMPT = [0, 3000, 3001, 3002, 3003];
const MAX_NEW_TOKENS = 8000;

describe('host memory budget', () => {
  let model: NativeModel;
  /** A request whose cache may grow to MAX_NEW_TOKENS tokens but that stops at its first token, whatever it is. */
  let request: GenerationRequest;
  let bound: number;

  before(async () => {
    model = await NativeModel.load(await tinyCheckpoint('v1'), { threads: 1 });
    request = { promptIds: PROMPT, maxNewTokens: MAX_NEW_TOKENS, stopIds: Array.from({ length: model.vocab }, (_, id) => id) };
    bound = kvCacheBoundBytes(model.config.decoder, model.kvCache, PROMPT.length, MAX_NEW_TOKENS);
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

  test('with room for one bound beside a short page, the second page waits for the first to leave', async () => {
    process.env[HOST_MEMORY_CAP_VARIABLE] = String(Math.ceil((process.memoryUsage().rss + ACTIVATION_RESERVE_BYTES + 1.5 * bound) / MIB));
    assert.deepEqual(await prefillsOfTwo(), [PROMPT.length, PROMPT.length, PROMPT.length]);
  });

  test('a page whose bound can never fit fails at once with the numbers, and the batch goes on', async () => {
    process.env[HOST_MEMORY_CAP_VARIABLE] = String(Math.ceil((process.memoryUsage().rss + ACTIVATION_RESERVE_BYTES + 0.5 * bound) / MIB));
    await assert.rejects(
      new ContinuousBatch(model, 2).generate(request),
      /^Error: out of memory on cpu-\S+: the KV cache of 8005 tokens needs up to \d+\.\d MiB, and the \d+\.\d MiB budget leaves \d+\.\d MiB beside the weights and activations \(the memory this process may hold .*SCRIPTORIUM_MEMORY_MB\) less 2048\.0 MiB kept for activations\)$/,
    );
    delete process.env[HOST_MEMORY_CAP_VARIABLE];
    assert.equal((await new ContinuousBatch(model, 2).generate(request)).ids.length, 1);
  });
});
