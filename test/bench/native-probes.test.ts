// What the benchmark reads from native code: the ceilings probe (an addon of its own) and the
// per-stage times of encodeImages. Only their shape and consistency are checked; speed is never asserted.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { measureCeilings } from '../../bench/engine/native-probes.js';
import { nativeBinding } from '../../src/engine/native-binding.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

describe('measureCeilings', () => {
  test('measures every ceiling of the active kernel set with the given threads', async () => {
    const c = await measureCeilings({ threads: 2, bufferBytes: 4 << 20, passes: 1, seconds: 0.05 });
    const model = await NativeModel.load(await tinyCheckpoint('v1'), { threads: 1 });
    assert.equal(c.kernels, model.kernels);
    assert.equal(c.threads, 2);
    assert.ok(['avx512', 'avx2', 'sse2', 'scalar'].includes(c.readSimd), c.readSimd);
    for (const key of ['readGBps', 'gemmF32Gflops', 'gemmBf16Gflops', 'gemmBf16FastGflops'] as const) assert.ok(c[key] > 0, `${key} ${c[key]}`);
    if (c.kernels === 'scalar') assert.deepEqual([c.peakF32Gflops, c.peakBf16Gflops], [0, 0]);
    else assert.ok(c.peakF32Gflops > 0 && c.peakBf16Gflops > 0, `peaks ${c.peakF32Gflops} ${c.peakBf16Gflops}`);
  });

  test('rejects options it cannot measure with', async () => {
    assert.throws(() => measureCeilings({ passes: 0 }), /passes must be an integer between 1 and 1000/);
    assert.throws(() => measureCeilings({ threads: 1.5 }), /threads must be an integer/);
    assert.throws(() => measureCeilings({ bufferBytes: 1000 }), /at least 256 KiB/);
    assert.throws(() => measureCeilings({ seconds: 0 }), /seconds must be in \(0, 600\]/);
  });

  test('the production engine carries no probe', () => {
    assert.equal('measureCeilings' in nativeBinding(), false);
  });
});

describe('encodeImages stage times', () => {
  test('SAM, the encoder and the projector each report their time, together within the call', async () => {
    for (const variant of ['v1', 'v2'] as const) {
      const model = await NativeModel.load(await tinyCheckpoint(variant), { threads: 2 });
      const side = 768;
      const started = performance.now();
      const { stageMs, tokensPerView } = await model.encodeImages(new Float32Array(2 * 3 * side * side), 2, side);
      const wallMs = performance.now() - started;
      assert.equal(tokensPerView, 144);
      assert.ok(stageMs.sam > 0 && stageMs.encoder > 0 && stageMs.projector > 0, JSON.stringify(stageMs));
      assert.ok(stageMs.sam + stageMs.encoder + stageMs.projector <= wallMs, `${JSON.stringify(stageMs)} within ${wallMs} ms`);
    }
  });
});
