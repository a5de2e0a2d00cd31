// The GPU decoder's forward call records every layer, MoE routing included, into one command batch:
// the host waits for the device once per call, however many layers and experts there are, so no
// per-layer read-back can creep back in. Runs on the tiny V1 checkpoint (llvmpipe in CI); skipped
// where the GPU backend is absent, unless SCRIPTORIUM_REQUIRE_VULKAN=1 (as .ci/run sets it).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { gpuBackendReport } from '../../src/engine/compute-device.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const report = await gpuBackendReport();
const skip = report.available || process.env.SCRIPTORIUM_REQUIRE_VULKAN === '1' ? false : `no GPU backend: ${report.reason}`;

test('a GPU forward call waits for the device once, with or without logits', { skip }, async () => {
  const gpu = await NativeModel.load(await tinyCheckpoint('v1'), { device: { kind: 'gpu', index: 0 } });
  const dims = gpu.config.decoder;
  assert.ok(dims.layers - dims.firstDenseLayers >= 2 && dims.expertsPerToken > 1, 'the checkpoint has several MoE layers with top_k > 1');
  const sequences = [gpu.createSequence(), gpu.createSequence()];
  const waitsOf = async (run: () => Promise<unknown>): Promise<number> => {
    const before = gpu.queueWaits!;
    await run();
    return gpu.queueWaits! - before;
  };
  // The first calls grow the activation buffers and KV caches (each growth may wait once).
  await gpu.forward([
    { sequence: sequences[0], ids: Int32Array.of(0, 11, 12, 13, 14, 15, 16), logits: false },
    { sequence: sequences[1], ids: Int32Array.of(0, 42, 4242), logits: false },
  ]);
  await gpu.forward(sequences.map((sequence) => ({ sequence, ids: Int32Array.of(7) })));
  for (let step = 0; step < 3; step++) {
    const logits = step !== 1;
    const waits = await waitsOf(() => gpu.forward(sequences.map((sequence, i) => ({ sequence, ids: Int32Array.of(100 + step + i), logits }))));
    assert.equal(waits, 1, `decode step ${step} (logits ${logits}) waited ${waits} times`);
  }
  const prefill = await waitsOf(() => gpu.forward([{ sequence: gpu.createSequence(), ids: Int32Array.of(0, 1, 2), logits: false }]));
  assert.ok(prefill <= 2, `a short prefill waited ${prefill} times (the new sequence's cache is made in one)`);
});
