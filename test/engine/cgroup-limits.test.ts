// What the engine may use of the machine: threads from the CPUs and the cgroup's CPU quota, memory
// from the machine's and the cgroup's limits, read from cgroup v2 and v1 files laid out as a
// container or a Kubernetes pod sees them.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { cgroupCpuQuotas, cgroupMemoryLimits, cpuLimit, cpusOfQuota, memoryLimit } from '../../src/engine/cgroup-limits.js';

describe('CPU limit', () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-cgroup-'));
  });
  after(() => rm(root, { recursive: true, force: true }));

  test('a cgroup quota is CPUs as quota over period; "max" and -1 are none', () => {
    assert.equal(cpusOfQuota('400000', '100000'), 4);
    assert.equal(cpusOfQuota('150000', '100000'), 1.5);
    assert.equal(cpusOfQuota('max', '100000'), undefined);
    assert.equal(cpusOfQuota('-1', '100000'), undefined);
    assert.equal(cpusOfQuota('', ''), undefined);
  });

  test('cgroup v2: the cpu.max of its own cgroup and of every parent', async () => {
    const v2 = path.join(root, 'v2');
    await mkdir(path.join(v2, 'kubepods/pod-1/worker'), { recursive: true });
    await writeFile(path.join(v2, 'kubepods/pod-1/worker/cpu.max'), '150000 100000\n');
    await writeFile(path.join(v2, 'kubepods/pod-1/cpu.max'), 'max 100000\n');
    await writeFile(path.join(v2, 'kubepods/cpu.max'), '400000 100000\n');
    await writeFile(path.join(v2, 'self-cgroup'), '0::/kubepods/pod-1/worker\n');
    assert.deepEqual(cgroupCpuQuotas(v2, path.join(v2, 'self-cgroup')), [1.5, 4]);
  });

  test('cgroup v1: cpu.cfs_quota_us over cpu.cfs_period_us', async () => {
    const v1 = path.join(root, 'v1');
    await mkdir(path.join(v1, 'cpu,cpuacct/docker/abc'), { recursive: true });
    await writeFile(path.join(v1, 'cpu,cpuacct/docker/abc/cpu.cfs_quota_us'), '200000\n');
    await writeFile(path.join(v1, 'cpu,cpuacct/docker/abc/cpu.cfs_period_us'), '100000\n');
    await writeFile(path.join(v1, 'cpu,cpuacct/cpu.cfs_quota_us'), '-1\n');
    await writeFile(path.join(v1, 'cpu,cpuacct/cpu.cfs_period_us'), '100000\n');
    await writeFile(path.join(v1, 'self-cgroup'), '5:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n');
    assert.deepEqual(cgroupCpuQuotas(v1, path.join(v1, 'self-cgroup')), [2]);
  });

  test('no cgroup files: no quota', () => {
    assert.deepEqual(cgroupCpuQuotas(path.join(root, 'absent'), path.join(root, 'absent', 'self-cgroup')), []);
  });

  test('threads are the CPUs capped by the tightest quota, rounded down, at least 1', () => {
    assert.equal(cpuLimit(64, [4]), 4);
    assert.equal(cpuLimit(8, [1.5, 4]), 1);
    assert.equal(cpuLimit(2, [4]), 2);
    assert.equal(cpuLimit(8, []), 8);
    assert.equal(cpuLimit(8, [0.5]), 1);
  });
});

describe('memory limit', () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-cgroup-memory-'));
  });
  after(() => rm(root, { recursive: true, force: true }));

  test('cgroup v2: the memory.max of its own cgroup and of every parent; "max" is none', async () => {
    const v2 = path.join(root, 'v2');
    await mkdir(path.join(v2, 'kubepods/pod-1/worker'), { recursive: true });
    await writeFile(path.join(v2, 'kubepods/pod-1/worker/memory.max'), 'max\n');
    await writeFile(path.join(v2, 'kubepods/pod-1/memory.max'), `${16 * 2 ** 30}\n`);
    await writeFile(path.join(v2, 'kubepods/memory.max'), `${64 * 2 ** 30}\n`);
    await writeFile(path.join(v2, 'self-cgroup'), '0::/kubepods/pod-1/worker\n');
    assert.deepEqual(cgroupMemoryLimits(v2, path.join(v2, 'self-cgroup')), [16 * 2 ** 30, 64 * 2 ** 30]);
  });

  test('cgroup v1: memory.limit_in_bytes, whose "no limit" is a value near 2^63', async () => {
    const v1 = path.join(root, 'v1');
    await mkdir(path.join(v1, 'memory/docker/abc'), { recursive: true });
    await writeFile(path.join(v1, 'memory/docker/abc/memory.limit_in_bytes'), `${8 * 2 ** 30}\n`);
    await writeFile(path.join(v1, 'memory/memory.limit_in_bytes'), '9223372036854771712\n');
    await writeFile(path.join(v1, 'self-cgroup'), '5:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n');
    assert.deepEqual(cgroupMemoryLimits(v1, path.join(v1, 'self-cgroup')), [8 * 2 ** 30]);
  });

  test('no cgroup files: no limit', () => {
    assert.deepEqual(cgroupMemoryLimits(path.join(root, 'absent'), path.join(root, 'absent', 'self-cgroup')), []);
  });

  test('the memory is the machine’s, capped by the tightest limit', () => {
    assert.equal(memoryLimit(64 * 2 ** 30, [16 * 2 ** 30, 32 * 2 ** 30]), 16 * 2 ** 30);
    assert.equal(memoryLimit(8 * 2 ** 30, [16 * 2 ** 30]), 8 * 2 ** 30);
    assert.equal(memoryLimit(8 * 2 ** 30, []), 8 * 2 ** 30);
  });
});
