// The GPU bench's inputs: the device ceilings probe (shaders on the first Vulkan device, llvmpipe in
// CI), the ceilings the decoder's figures are compared with, and --device. Only shape and consistency
// are checked; speed is never asserted. The probe is skipped where the GPU backend is absent, unless
// SCRIPTORIUM_REQUIRE_VULKAN=1 (as .ci/run sets it) makes that a failure.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { parseBenchArgs } from '../../bench/engine/bench-options.js';
import { gpuModelCeilings, measureGpuCeilings, type MachineCeilings } from '../../bench/engine/native-probes.js';
import { gpuBackendReport } from '../../src/engine/compute-device.js';

const report = await gpuBackendReport();
const skip = report.available || process.env.SCRIPTORIUM_REQUIRE_VULKAN === '1' ? false : `no GPU backend: ${report.reason}`;

describe('GPU ceilings', () => {
  test('the device is measured by shaders: read bandwidth and every matmul path it runs', { skip }, async () => {
    const c = await measureGpuCeilings({ device: 0, bufferBytes: 4 << 20, passes: 1, matmulSide: 64, seconds: 0.05 });
    assert.equal(c.device, report.devices[0].name);
    assert.equal(c.bufferBytes, 4 << 20);
    assert.ok(c.readGBps > 0, `read ${c.readGBps}`);
    assert.deepEqual(c.matmul.map((m) => m.path), report.devices[0].shaderPaths);
    for (const m of c.matmul) assert.ok(m.gflops > 0, `${m.path} ${m.gflops}`);
  });

  test('options it cannot measure with are refused', { skip }, async () => {
    await assert.rejects(async () => measureGpuCeilings({ matmulSide: 100 }), /matmulSide must be a multiple of 64/);
    await assert.rejects(async () => measureGpuCeilings({ bufferBytes: 1000 }), /bufferBytes must be in \[1 MiB, 64 GiB\]/);
  });

  test("the decoder's ceilings are the device's bandwidth and fastest matmul path; the encoders keep the CPU's", () => {
    const cpu = { kernels: 'avx2', threads: 8, readSimd: 'avx2', readGBps: 30, gemmF32Gflops: 100, gemmBf16Gflops: 150, gemmBf16FastGflops: 250, peakF32Gflops: 0, peakBf16Gflops: 0, clockGhz: 3 } satisfies MachineCeilings;
    const gpu = { device: 'NVIDIA H200', bufferBytes: 2 ** 30, readGBps: 4000, matmul: [{ path: 'portable', gflops: 20000 }, { path: 'cooperative-matrix', gflops: 300000 }] };
    assert.deepEqual(gpuModelCeilings(cpu, gpu), { ...cpu, readGBps: 4000, gemmF32Gflops: 300000, gemmBf16Gflops: 300000, gemmBf16FastGflops: 300000 });
  });

  test('--device takes the engine\'s device names (default cpu)', () => {
    const parse = (...args: string[]) => parseBenchArgs(args, {});
    assert.deepEqual((parse() as Exclude<ReturnType<typeof parse>, 'help'>).device, { kind: 'cpu' });
    assert.deepEqual((parse('--device', 'gpu:1') as Exclude<ReturnType<typeof parse>, 'help'>).device, { kind: 'gpu', index: 1 });
    assert.throws(() => parse('--device', 'cuda'), /--device must be cpu, gpu, gpu:N or auto/);
  });
});
