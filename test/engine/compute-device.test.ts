// --device parsing and resolution against a GPU backend report (no GPU needed).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { deviceLabel, parseDeviceSpec, resolveDevice } from '../../src/engine/compute-device.js';
import type { GpuBackendReport, GpuDeviceInfo } from '../../src/engine/native-binding.js';

function device(index: number, name: string, type: GpuDeviceInfo['type']): GpuDeviceInfo {
  return {
    index, name, type, apiVersion: '1.3.0', memoryBytes: 2 ** 34, memoryBudgetBytes: 0.9 * 2 ** 34, subgroupSize: 32, sharedMemoryBytes: 49152, bindingLimitBytes: 2 ** 32 - 1,
    computeQueue: true, shaderPaths: ['portable'], matmulPath: 'portable', cooperativeMatrixExtensions: [],
  };
}

const absent: GpuBackendReport = { available: false, reason: 'this build of the addon has no Vulkan backend: it was built without glslc', devices: [] };
const twoGpus: GpuBackendReport = { available: true, devices: [device(0, 'llvmpipe', 'cpu'), device(1, 'NVIDIA H200', 'discrete')] };

describe('--device', () => {
  test('parses cpu, auto, gpu (= gpu:0) and gpu:N, and rejects anything else', () => {
    assert.deepEqual(parseDeviceSpec('cpu'), { kind: 'cpu' });
    assert.deepEqual(parseDeviceSpec('auto'), { kind: 'auto' });
    assert.deepEqual(parseDeviceSpec('gpu'), { kind: 'gpu', index: 0 });
    assert.deepEqual(parseDeviceSpec('gpu:3'), { kind: 'gpu', index: 3 });
    for (const bad of ['GPU', 'gpu:', 'gpu:-1', 'gpu:x', 'cuda']) assert.throws(() => parseDeviceSpec(bad), /--device must be cpu, gpu, gpu:N or auto/);
  });

  test('gpu without a GPU backend is an error that says what is missing', async () => {
    await assert.rejects(resolveDevice({ kind: 'gpu', index: 0 }, absent), /GPU backend is not available: .*built without glslc/);
  });

  test('gpu:N names the devices there are when N is not one of them', async () => {
    await assert.rejects(resolveDevice({ kind: 'gpu', index: 5 }, twoGpus), /gpu:5: no such Vulkan device; this machine has gpu:0 \(llvmpipe\), gpu:1 \(NVIDIA H200\)/);
  });

  test('auto takes the first discrete GPU, else the CPU', async () => {
    assert.deepEqual(await resolveDevice({ kind: 'auto' }, twoGpus), { backend: 'vulkan', index: 1, name: 'NVIDIA H200' });
    assert.deepEqual(await resolveDevice({ kind: 'auto' }, { available: true, devices: [device(0, 'llvmpipe', 'cpu')] }), { backend: 'cpu' });
    assert.deepEqual(await resolveDevice({ kind: 'auto' }, absent), { backend: 'cpu' });
  });

  test('labels name the backend and the device', () => {
    assert.equal(deviceLabel({ backend: 'cpu' }, 'avx2'), 'cpu-avx2');
    assert.equal(deviceLabel({ backend: 'vulkan', index: 1, name: 'NVIDIA H200' }, 'avx2'), 'vulkan:NVIDIA H200');
  });
});
