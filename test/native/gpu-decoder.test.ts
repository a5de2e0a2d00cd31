// The decoder on the Vulkan backend against the CPU engine on tiny checkpoints (llvmpipe in CI), both
// with their default half KV caches: prefill logits within 1e-3 of the largest logit, greedy ids
// equal except at near-ties (both engines teacher-forced on the CPU's ids), V3's R-SWA ring past 128
// generated tokens (with F32-cache twins in the batch: the GPU's half cache within the CPU half
// cache's bound of its F32 cache, as kv-cache-f16.test.ts holds the CPU's), and batched decode
// bitwise equal to one sequence at a time. In fast precision the GPU's portable products against the
// CPU engine's fast ones. Skipped where the GPU backend is absent, unless
// SCRIPTORIUM_REQUIRE_VULKAN=1 (as .ci/run sets it) makes that a failure.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { gpuBackendReport } from '../../src/engine/compute-device.js';
import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import { kvSlotBytes } from '../../src/engine/device-memory.js';
import type { NativeSequence } from '../../src/engine/native-binding.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { maxAbs, maxAbsDiff } from '../support/compare-with-reference.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const TOLERANCE = 1e-3; // of the largest |logit|
const FAST_TOLERANCE = 1e-2; // --precision fast against the CPU engine's fast run, of the largest logit (docs/model.md §12)
const KV_F16_TOLERANCE = 1e-3; // the half cache against the F32 cache, of the largest F32 logit (docs/model.md §7.5)
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

function meanAbsDiff(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i] - b[i]);
  return sum / a.length;
}

/** The two largest values of a row, largest first. */
function topTwo(logits: Float32Array): [number, number] {
  let first = -Infinity;
  let second = -Infinity;
  for (const v of logits) {
    if (v > first) [first, second] = [v, first];
    else if (v > second) second = v;
  }
  return [first, second];
}

// The gap between the best and second-best logit is below the tolerance: either id may win.
function nearTie(logits: Float32Array): boolean {
  const [first, second] = topTwo(logits);
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

  test('the model names its backend and device, and both engines keep half caches by default', () => {
    assert.match(v3.gpu.backend, /^vulkan:.+/);
    assert.match(v3.cpu.backend, /^cpu-/);
    assert.equal(v3.gpu.kvCache, 'f16');
    assert.equal(v3.cpu.kvCache, 'f16');
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

  test('v3: two sequences decoded together past the 128-slot R-SWA ring match the CPU engine one at a time, and an F32-cache twin within the half-cache bound', async (t) => {
    const steps = 132;
    const { cpu, gpu } = v3;
    const prompts = PROMPTS.slice(0, 2);
    const cpuSeqs = prompts.map(() => cpu.createSequence());
    // Half caches (the default) and, in the same batch, an F32 twin of the first fed the same ids.
    const twin = prompts.length;
    const gpuSeqs = [...prompts.map(() => gpu.createSequence()), gpu.createSequence('f32')];
    let next = await Promise.all(prompts.map(async (p, i) => (await cpu.forward([{ sequence: cpuSeqs[i], ids: Int32Array.from(p) }]))[0]));
    await gpu.forward(gpuSeqs.map((sequence, i) => ({ sequence, ids: Int32Array.from(prompts[i % twin]), logits: false })));
    let compared = 0;
    let worstHalf = 0;
    for (let step = 0; step < steps; step++) {
      const ids = next.map((r) => r.best);
      const last = step === steps - 1;
      const cpuOut = await Promise.all(ids.map(async (id, i) => (await cpu.forward([{ sequence: cpuSeqs[i], ids: Int32Array.of(id) }]))[0]));
      const gpuOut = await gpu.forward(gpuSeqs.map((sequence, i) => ({ sequence, ids: Int32Array.of(ids[i % twin]), logits: last || i % twin === 0 })));
      const [half, full] = [gpuOut[0], gpuOut[twin]];
      const scale = maxAbs(full.logits!);
      const relative = maxAbsDiff(half.logits!, full.logits!) / scale;
      worstHalf = Math.max(worstHalf, relative);
      assert.ok(relative <= KV_F16_TOLERANCE, `generated token ${step + 1}: the half cache is off by ${relative} of the largest`);
      const [first, second] = topTwo(full.logits!);
      if (first - second >= 2 * KV_F16_TOLERANCE * scale) assert.equal(half.best, full.best, `generated token ${step + 1}: half-cache argmax`);
      for (let i = 0; i < ids.length; i++) {
        if (nearTie(cpuOut[i].logits!)) continue;
        assert.equal(gpuOut[i].best, cpuOut[i].best, `sequence ${i}, generated token ${step + 1}`);
        compared++;
      }
      if (last) gpuOut.slice(0, twin).forEach((g, i) => assertClose(g.logits!, cpuOut[i].logits!, `sequence ${i} after ${steps} tokens`));
      next = cpuOut; // every engine follows the CPU's ids
    }
    assert.ok(compared > steps, `only ${compared} steps were free of near-ties`);
    t.diagnostic(`half cache against F32 cache on the GPU: max logit error ${worstHalf.toExponential(2)} of the largest (bound ${KV_F16_TOLERANCE})`);
    const dims = gpu.config.decoder;
    gpuSeqs.forEach((s, i) => {
      const kvCache = i < twin ? 'f16' : 'f32';
      assert.equal(s.length, prompts[i % twin].length + steps);
      assert.equal(s.cacheBytes, (prompts[i % twin].length + dims.slidingWindow) * kvSlotBytes(dims, kvCache), `the ring stops the ${kvCache} cache growing`);
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

  test('v3 fast precision: the GPU rounds activations to BF16 as the CPU\'s fast products do, within the fast bound', async (t) => {
    const dir = await tinyCheckpoint('v3');
    const cpuFast = await NativeModel.load(dir, { threads: 2, precision: 'fast' });
    const gpuFast = await NativeModel.load(dir, { device: { kind: 'gpu', index: 0 }, precision: 'fast' });
    const models = [cpuFast, gpuFast, v3.gpu];
    const sequences = models.map((m) => m.createSequence());
    // The CPU's fast prefill attention rounds to BF16 for 16 or more new tokens of a sequence, the
    // GPU's stays F32: a prefill of 10 tokens, then the prompt's other tokens one at a time (V3's
    // window takes single tokens after the prefill), all of which the CPU attends row by row in F32,
    // so the engines differ in their products alone.
    const prompt = PROMPTS[0];
    const feed = (ids: number[]) => Promise.all(models.map((m, i) => m.forward([{ sequence: sequences[i], ids: Int32Array.from(ids), logits: false }])));
    await feed(prompt.slice(0, 10));
    for (const id of prompt.slice(10, -1)) await feed([id]);
    let ids = Int32Array.from(prompt.slice(-1));
    let fastApart = 0; // summed mean |difference| of the GPU's fast logits from the CPU's fast ones
    let exactApart = 0; // the same for the GPU's exact logits
    for (let step = 0; step < 4; step++) {
      const [c, fast, exact] = await Promise.all(models.map(async (m, i) => (await m.forward([{ sequence: sequences[i], ids }]))[0]));
      const scale = maxAbs(c.logits!);
      const worst = maxAbsDiff(fast.logits!, c.logits!) / scale;
      assert.ok(worst <= FAST_TOLERANCE, `step ${step}: ${worst} of the largest logit from the CPU's fast run`);
      fastApart += meanAbsDiff(fast.logits!, c.logits!) / scale;
      exactApart += meanAbsDiff(exact.logits!, c.logits!) / scale;
      ids = Int32Array.of(c.best); // all follow the CPU's ids
    }
    t.diagnostic(`mean logit difference from the CPU's fast run: GPU fast ${fastApart / 4}, GPU exact ${exactApart / 4} of the largest`);
    // Where the CPU has BF16 dot products its fast run rounds as the GPU's does, so the GPU's fast
    // run is the nearer one (rounding flips that F32 noise causes keep them from agreeing bitwise);
    // elsewhere the CPU's fast run is its exact one, which the GPU's exact run stays near and its fast
    // run, rounding, does not. A device on the cooperative-matrix path rounds its prefill to FP16
    // instead, held to the bound alone.
    const apart = `GPU fast ${fastApart}, GPU exact ${exactApart} from the CPU's fast run`;
    if (report.devices[0].matmulPath !== 'portable') return;
    if (cpuFast.kernels === 'avx512bf16') assert.ok(fastApart < 0.75 * exactApart, apart);
    else assert.ok(fastApart > 5 * exactApart, apart);
  });

  test('gpu:N that does not exist is a clear error', async () => {
    await assert.rejects(NativeModel.load(await tinyCheckpoint('v3'), { device: { kind: 'gpu', index: 99 } }), /gpu:99: no such Vulkan device/);
  });
});
