// The decoder on the Vulkan backend against the CPU engine on tiny checkpoints (llvmpipe in CI):
// prefill logits within 1e-3 of the largest logit, greedy ids equal except at near-ties (both engines
// teacher-forced on the CPU's ids), V3's R-SWA ring past 128 generated tokens, and batched decode
// bitwise equal to one sequence at a time. Skipped where the GPU backend is absent, unless
// SCRIPTORIUM_REQUIRE_VULKAN=1 (as .ci/run sets it) makes that a failure.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { gpuBackendReport } from '../src/engine/compute-device.js';
import type { Variant } from '../src/engine/model-config.js';
import { NativeModel, type NativeSequence } from '../src/engine/native-model.js';
import { tinyCheckpoint } from './support/tiny-checkpoints.js';

const TOLERANCE = 1e-3; // of the largest |logit|
const report = await gpuBackendReport();
const skip = report.available || process.env.SCRIPTORIUM_REQUIRE_VULKAN === '1' ? false : `no GPU backend: ${report.reason}`;

function largest(values: Float32Array): number {
  return values.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
}

function assertClose(gpu: Float32Array, cpu: Float32Array, what: string): void {
  const scale = largest(cpu);
  let worst = 0;
  for (let i = 0; i < cpu.length; i++) worst = Math.max(worst, Math.abs(gpu[i] - cpu[i]));
  assert.ok(worst <= TOLERANCE * scale, `${what}: largest difference ${worst} exceeds ${TOLERANCE} × ${scale}`);
}

// The gap between the best and second-best logit is below the tolerance: either id may win.
function nearTie(logits: Float32Array): boolean {
  let first = -Infinity;
  let second = -Infinity;
  for (const v of logits) {
    if (v > first) [first, second] = [v, first];
    else if (v > second) second = v;
  }
  return first - second <= TOLERANCE * largest(logits);
}

const PROMPTS = [
  [0, 5000, 6000, 7000, 8000, 9000, 10000, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22],
  [0, 42, 4242, 424, 24],
  [0, 99, 98, 97, 96, 95, 94, 93, 92],
];

async function models(variant: Variant): Promise<{ cpu: NativeModel; gpu: NativeModel }> {
  const dir = await tinyCheckpoint(variant);
  return { cpu: await NativeModel.load(dir, { threads: 2 }), gpu: await NativeModel.load(dir, { device: { kind: 'gpu', index: 0 } }) };
}

describe('decoder on the GPU backend', { skip }, () => {
  let v3: { cpu: NativeModel; gpu: NativeModel };
  before(async () => {
    v3 = await models('v3');
  });

  test('the model names its backend and device', () => {
    assert.match(v3.gpu.backend, /^vulkan:.+/);
    assert.match(v3.cpu.backend, /^cpu-/);
  });

  for (const variant of ['v1', 'v3'] as const) {
    test(`${variant}: prefill logits within 1e-3 of the largest logit of the CPU engine's`, async () => {
      const { cpu, gpu } = variant === 'v3' ? v3 : await models(variant);
      const ids = Int32Array.from(PROMPTS[0]);
      const [c] = await cpu.forward([{ sequence: cpu.createSequence(), ids }]);
      const [g] = await gpu.forward([{ sequence: gpu.createSequence(), ids }]);
      assertClose(g.logits!, c.logits!, `${variant} prefill`);
      if (!nearTie(c.logits!)) assert.equal(g.best, c.best);
    });
  }

  test('v3: replaced embedding rows reach the GPU decoder as they reach the CPU one', async () => {
    const hidden = v3.cpu.config.decoder.hidden;
    const embeds = Float32Array.from({ length: 2 * hidden }, (_, i) => Math.sin(i) * 0.05);
    const input = { ids: Int32Array.from(PROMPTS[1]), embeds, embedRows: Int32Array.of(1, 3) };
    const [c] = await v3.cpu.forward([{ sequence: v3.cpu.createSequence(), ...input }]);
    const [g] = await v3.gpu.forward([{ sequence: v3.gpu.createSequence(), ...input }]);
    assertClose(g.logits!, c.logits!, 'prefill with image rows');
  });

  test('v3: two sequences decoded together past the 128-slot R-SWA ring match the CPU engine one at a time', async () => {
    const steps = 132;
    const { cpu, gpu } = v3;
    const cpuSeqs = PROMPTS.slice(0, 2).map(() => cpu.createSequence());
    const gpuSeqs = PROMPTS.slice(0, 2).map(() => gpu.createSequence());
    let next = await Promise.all(PROMPTS.slice(0, 2).map(async (p, i) => (await cpu.forward([{ sequence: cpuSeqs[i], ids: Int32Array.from(p) }]))[0]));
    await gpu.forward(PROMPTS.slice(0, 2).map((p, i) => ({ sequence: gpuSeqs[i], ids: Int32Array.from(p), logits: false })));
    let compared = 0;
    for (let step = 0; step < steps; step++) {
      const ids = next.map((r) => r.best);
      const last = step === steps - 1;
      const cpuOut = await Promise.all(ids.map(async (id, i) => (await cpu.forward([{ sequence: cpuSeqs[i], ids: Int32Array.of(id) }]))[0]));
      const gpuOut = await gpu.forward(ids.map((id, i) => ({ sequence: gpuSeqs[i], ids: Int32Array.of(id), logits: last })));
      for (let i = 0; i < ids.length; i++) {
        if (nearTie(cpuOut[i].logits!)) continue;
        assert.equal(gpuOut[i].best, cpuOut[i].best, `sequence ${i}, generated token ${step + 1}`);
        compared++;
      }
      if (last) gpuOut.forEach((g, i) => assertClose(g.logits!, cpuOut[i].logits!, `sequence ${i} after ${steps} tokens`));
      next = cpuOut; // both engines follow the CPU's ids
    }
    assert.ok(compared > steps, `only ${compared} steps were free of near-ties`);
    const dims = gpu.config.decoder;
    const rowBytes = 2 * dims.layers * dims.kvHeads * dims.headDim * 4;
    gpuSeqs.forEach((s, i) => {
      assert.equal(s.length, PROMPTS[i].length + steps);
      assert.equal(s.cacheBytes, (PROMPTS[i].length + dims.slidingWindow) * rowBytes, 'the ring stops the cache growing');
    });
  });

  test('batched decode on the GPU is bitwise one sequence at a time', async () => {
    const { gpu } = v3;
    const prefill = (seqs: NativeSequence[]) => gpu.forward(PROMPTS.map((p, i) => ({ sequence: seqs[i], ids: Int32Array.from(p), logits: false })));
    const batched = PROMPTS.map(() => gpu.createSequence());
    const alone = PROMPTS.map(() => gpu.createSequence());
    await prefill(batched);
    for (let i = 0; i < PROMPTS.length; i++) await gpu.forward([{ sequence: alone[i], ids: Int32Array.from(PROMPTS[i]), logits: false }]);
    for (let step = 0; step < 3; step++) {
      const ids = [100 + step, 2000 + step, 30000 + step];
      const together = await gpu.forward(ids.map((id, i) => ({ sequence: batched[i], ids: Int32Array.of(id) })));
      for (let i = 0; i < ids.length; i++) {
        const [one] = await gpu.forward([{ sequence: alone[i], ids: Int32Array.of(ids[i]) }]);
        assert.deepEqual(together[i].logits, one.logits, `sequence ${i}, step ${step}`);
        assert.equal(together[i].best, one.best);
      }
    }
  });

  test('banned ids are skipped by the argmax on the device as on the CPU', async () => {
    const ids = Int32Array.from(PROMPTS[2]);
    const [first] = await v3.cpu.forward([{ sequence: v3.cpu.createSequence(), ids }]);
    const banned = Int32Array.of(129279, first.best, 7, first.best); // unsorted, with a repeat
    const [c] = await v3.cpu.forward([{ sequence: v3.cpu.createSequence(), ids, banned, logits: false }]);
    const [g] = await v3.gpu.forward([{ sequence: v3.gpu.createSequence(), ids, banned, logits: false }]);
    assert.notEqual(c.best, first.best);
    assert.equal(g.best, c.best);
  });

  test('bad input is rejected with the CPU engine\'s message and the sequence stays usable', async () => {
    const sequence = v3.gpu.createSequence();
    await assert.rejects(v3.gpu.forward([{ sequence, ids: Int32Array.of(0, 1 << 30) }]), /token id 1073741824 outside the vocabulary/);
    assert.equal(sequence.length, 0);
    await v3.gpu.forward([{ sequence, ids: Int32Array.of(0, 1, 2), logits: false }]);
    assert.equal(sequence.length, 3);
  });

  test('gpu:N that does not exist is a clear error', async () => {
    await assert.rejects(NativeModel.load(await tinyCheckpoint('v3'), { device: { kind: 'gpu', index: 99 } }), /gpu:99: no such Vulkan device/);
  });
});
