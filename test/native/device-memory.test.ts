// GPU memory budgeting: the bound of a KV cache and the admission rule (no GPU needed), then on the
// first Vulkan device (llvmpipe in CI): a half cache holds the bytes its bound counts, half an F32
// cache's; with the budget capped a little above what the weights and activations hold (F32
// caches): sequences that cannot decode together wait for each other, one that can never fit fails
// with the numbers while the others complete, and a forward call the device refuses fails alone and
// keeps nothing. The device part is skipped where the GPU backend is absent,
// unless SCRIPTORIUM_REQUIRE_VULKAN=1 (as .ci/run sets it) makes that a failure.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { gpuBackendReport } from '../../src/engine/compute-device.js';
import { admission, GPU_MEMORY_CAP_VARIABLE, kvCacheBoundBytes, kvSlotBytes } from '../../src/engine/device-memory.js';
import { ContinuousBatch, type GenerationRequest } from '../../src/engine/generate.js';
import type { DecoderDims } from '../../src/engine/model-config.js';
import type { ForwardInput } from '../../src/engine/native-binding.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const MB = 1e6;
const MIB = 2 ** 20;
const dims = (slidingWindow: number) => ({ layers: 3, kvHeads: 2, headDim: 128, maxPositions: 32768, slidingWindow }) as DecoderDims;

describe('device memory plan', () => {
  test('a KV cache slot holds the keys and values of every layer, in f32 or in half', () => {
    assert.equal(kvSlotBytes(dims(0), 'f32'), 2 * 3 * 2 * 128 * 4);
    assert.equal(kvSlotBytes(dims(0), 'f16'), 2 * 3 * 2 * 128 * 2);
  });

  test('a half row of odd width is padded to an even count of halves', () => {
    const odd = { layers: 2, kvHeads: 3, headDim: 7 } as DecoderDims;
    assert.equal(kvSlotBytes(odd, 'f32'), 2 * 2 * 21 * 4);
    assert.equal(kvSlotBytes(odd, 'f16'), 2 * 2 * 22 * 2);
  });

  test('the bound of a cache allows its growth: 256 slots more, or half again, within the positions', () => {
    for (const kvCache of ['f32', 'f16'] as const) {
      const slot = kvSlotBytes(dims(0), kvCache);
      assert.equal(kvCacheBoundBytes(dims(0), kvCache, 10, 3), (13 + 256) * slot);
      assert.equal(kvCacheBoundBytes(dims(0), kvCache, 1000, 1000), 3000 * slot);
      assert.equal(kvCacheBoundBytes(dims(0), kvCache, 30000, 10000), 32768 * slot);
    }
  });

  test('with R-SWA a cache never holds more than the prompt and the window', () => {
    assert.equal(kvCacheBoundBytes(dims(128), 'f16', 10, 100000), (10 + 128) * kvSlotBytes(dims(128), 'f16'));
  });

  test('a sequence joins while the bounds fit beside the other buffers, waits when only the batch is in the way, and never fits when it is alone too large', () => {
    // 100 of the 1000 budget held by weights and activations, 50 by the one cache in the batch.
    const memory = { budgetBytes: 1000, usedBytes: 150 };
    const batch = [{ boundBytes: 400, cacheBytes: 50 }];
    assert.equal(admission(memory, batch, 500), 'join');
    assert.equal(admission(memory, batch, 501), 'wait');
    assert.equal(admission(memory, batch, 900), 'wait');
    assert.equal(admission(memory, batch, 901), 'never');
    assert.equal(admission({ budgetBytes: 1000, usedBytes: 100 }, [], 900), 'join', 'once the batch has left');
  });
});

const report = await gpuBackendReport();
const skip = report.available || process.env.SCRIPTORIUM_REQUIRE_VULKAN === '1' ? false : `no GPU backend: ${report.reason}`;
const PROMPT = Array.from({ length: 10 }, (_, i) => 100 + i);

/** One 10-token prefill and a decode step, released: grows the activation buffers as the tests will. */
async function warmUp(model: NativeModel): Promise<void> {
  const sequence = model.createSequence();
  const [first] = await model.forward([{ sequence, ids: Int32Array.from(PROMPT), logits: false }]);
  await model.forward([{ sequence, ids: Int32Array.of(first.best), logits: false }]);
  sequence.release();
}

describe('device memory budget on the GPU backend', { skip }, () => {
  let uncapped: NativeModel;
  let model: NativeModel;
  let slot: number;

  before(async () => {
    const dir = await tinyCheckpoint('v1');
    // What the weights and activations hold, measured on an uncapped model (half caches, the
    // default); then a cap that leaves between 2 and 3 MB for F32 KV caches: one 13-token sequence's
    // bound (269 slots, 1.65 MB) fits, two do not.
    uncapped = await NativeModel.load(dir, { device: { kind: 'gpu', index: 0 }, threads: 1 });
    await warmUp(uncapped);
    const held = uncapped.deviceMemory!.usedBytes;
    process.env[GPU_MEMORY_CAP_VARIABLE] = String(Math.floor((held + 3 * MB) / MIB));
    try {
      model = await NativeModel.load(dir, { device: { kind: 'gpu', index: 0 }, threads: 1, kvCache: 'f32' });
    } finally {
      delete process.env[GPU_MEMORY_CAP_VARIABLE];
    }
    await warmUp(model);
    slot = kvSlotBytes(model.config.decoder, 'f32');
    const room = model.deviceMemory!.budgetBytes - model.deviceMemory!.usedBytes;
    assert.equal(model.deviceMemory!.usedBytes, held, 'the capped model holds what the uncapped one did');
    assert.ok(room > 2 * MB && room <= 3 * MB && 269 * slot < room && 2 * 269 * slot > room, `room ${room}`);
  });

  test('a half cache holds the bytes of its bound in half slots, half those of an F32 cache, and the device counts them', async () => {
    const dims = uncapped.config.decoder;
    const before = uncapped.deviceMemory!.usedBytes;
    const half = uncapped.createSequence();
    await uncapped.forward([{ sequence: half, ids: Int32Array.from(PROMPT), logits: false }]);
    const full = model.createSequence();
    await model.forward([{ sequence: full, ids: Int32Array.from(PROMPT), logits: false }]);
    assert.equal(half.cacheBytes, kvCacheBoundBytes(dims, 'f16', PROMPT.length, 0), 'a 10-token prefill fills its bound of 266 slots');
    assert.equal(half.cacheBytes, 266 * kvSlotBytes(dims, 'f16'));
    assert.equal(half.cacheBytes * 2, full.cacheBytes);
    assert.equal(uncapped.deviceMemory!.usedBytes - before, half.cacheBytes);
    half.release();
    full.release();
    assert.equal(uncapped.deviceMemory!.usedBytes, before);
  });

  test('pages wait for room, and one that can never fit fails with the numbers while the others complete', async () => {
    const batchSizes: number[] = [];
    const spied = new Proxy(model, {
      get(target, key) {
        if (key === 'step') return (batch: ForwardInput[]) => (batchSizes.push(batch.length), target.step(batch));
        return Reflect.get(target, key) as unknown;
      },
    });
    const decoding = new ContinuousBatch(spied, 8);
    const request = (maxNewTokens: number): GenerationRequest => ({ promptIds: PROMPT, maxNewTokens, stopAtEos: false });
    const [first, tooLong, second] = await Promise.allSettled([
      decoding.generate(request(3)),
      decoding.generate(request(1000)),
      decoding.generate(request(3)),
    ]);
    assert.equal(first.status, 'fulfilled');
    assert.equal(second.status, 'fulfilled');
    assert.equal(first.value.ids.length, 3);
    assert.deepEqual(second.value.ids, first.value.ids, 'the same prompt gives the same ids');
    assert.equal(tooLong.status, 'rejected');
    assert.match(
      (tooLong.reason as Error).message,
      /^out of device memory on vulkan:.+: the KV cache of 1010 tokens needs up to 8\.9 MiB, and the \d+\.\d MiB budget leaves \d\.\d MiB beside the weights and activations \(SCRIPTORIUM_GPU_MEMORY_MB caps/,
    );
    assert.deepEqual(batchSizes, [1, 1, 1, 1, 1, 1], 'the two short pages never decoded together');
  });

  test('a forward call the device cannot hold fails with its message, keeps nothing, and the model goes on', async () => {
    const usedBefore = model.deviceMemory!.usedBytes;
    const sequence = model.createSequence();
    const long = Int32Array.from({ length: 2000 }, (_, i) => 5 + i);
    await assert.rejects(model.forward([{ sequence, ids: long, logits: false }]), /^Error: out of device memory on .+ budget are in use/);
    assert.ok(model.deviceMemory!.usedBytes <= usedBefore, 'the refused call left no buffer behind');
    assert.equal(sequence.length, 0);
    const [out] = await model.forward([{ sequence, ids: Int32Array.from(PROMPT), logits: false }]);
    assert.equal(sequence.length, PROMPT.length);
    assert.ok(out.best >= 0);
    sequence.release();
  });
});
