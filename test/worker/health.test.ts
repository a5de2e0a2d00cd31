// A worker's health as its supervisor sees it: /healthz (event loop responsive) and /readyz (model
// loaded, Redis reachable, not stopping) on the metrics port, and the engine's default thread count,
// which follows the cgroup's CPU limit.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { pino } from 'pino';

import { cgroupCpuQuotas, cpuLimit, cpusOfQuota } from '../../src/engine/cpu-limit.js';
import { freePort, startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { serveMetrics, type MetricsServer } from '../../src/worker/worker-metrics.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';
import { WorkerProcess } from '../support/worker-processes.js';

const logger = pino({ level: 'silent' });

async function get(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Blocks this thread (and so the event loop) for `ms` without spinning. */
function blockEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

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

describe('worker /healthz and /readyz', { skip: REDIS_SERVER_MISSING }, () => {
  let redis: EmbeddedRedis;
  let metrics: MetricsServer;
  let base: string;

  before(async () => {
    redis = await startEmbeddedRedis();
    metrics = await serveMetrics({ port: 0, host: '127.0.0.1', redisUrl: redis.url, logger, eventLoopLimitMs: 1_000 });
    base = `http://127.0.0.1:${new URL(metrics.url).port}`;
  });
  after(async () => {
    await metrics?.close();
    await redis?.close();
  });

  test('/healthz is 200 while the event loop keeps up', async () => {
    const { status, body } = await get(`${base}/healthz`);
    assert.equal(status, 200);
    assert.equal(body.eventLoop, 'ok');
  });

  test('/healthz is 503 after the event loop stalled longer than the limit', async () => {
    blockEventLoop(1_500);
    const { status, body } = await get(`${base}/healthz`);
    assert.equal(status, 503);
    assert.equal(body.eventLoop, 'stalled');
    assert.ok(Number(body.worstStallMs) >= 1_000, `worst stall ${String(body.worstStallMs)} ms`);
  });

  test('/readyz is 503 until the model is loaded, 200 then, and 503 once the process stops', async () => {
    assert.deepEqual(await get(`${base}/readyz`), { status: 503, body: { model: 'loading', redis: 'ok' } });
    metrics.health.modelLoaded();
    assert.deepEqual(await get(`${base}/readyz`), { status: 200, body: { model: 'loaded', redis: 'ok' } });
    metrics.health.stopping();
    assert.deepEqual(await get(`${base}/readyz`), { status: 503, body: { model: 'stopping', redis: 'ok' } });
  });

  test('/readyz is 503 while Redis does not answer', async () => {
    const other = await startEmbeddedRedis();
    const server = await serveMetrics({ port: 0, host: '127.0.0.1', redisUrl: other.url, logger });
    try {
      server.health.modelLoaded();
      assert.equal((await get(`http://127.0.0.1:${new URL(server.url).port}/readyz`)).status, 200);
      await other.close();
      assert.deepEqual(await get(`http://127.0.0.1:${new URL(server.url).port}/readyz`), { status: 503, body: { model: 'loaded', redis: 'unreachable' } });
    } finally {
      await server.close();
      await other.close();
    }
  });
});

describe('scriptorium work --metrics-port', { skip: REDIS_SERVER_MISSING }, () => {
  let redis: EmbeddedRedis;
  let root: string;
  before(async () => {
    redis = await startEmbeddedRedis();
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-work-health-'));
  });
  after(async () => {
    await redis?.close();
    await rm(root, { recursive: true, force: true });
  });

  test('is ready once its model is loaded, and live', async () => {
    const port = await freePort();
    const worker = new WorkerProcess({
      args: ['--model', await tinyCheckpoint('v3'), '--threads', '1', '--storage', root, '--metrics-port', String(port), '--metrics-host', '127.0.0.1'],
      env: { REDIS_URL: redis.url, LOG_LEVEL: 'info' },
    });
    try {
      await worker.waitForOutput('taking jobs');
      assert.deepEqual(await get(`http://127.0.0.1:${port}/readyz`), { status: 200, body: { model: 'loaded', redis: 'ok' } });
      assert.equal((await get(`http://127.0.0.1:${port}/healthz`)).status, 200);
    } finally {
      worker.child.kill('SIGTERM');
      assert.deepEqual(await worker.exited, { code: 0, signal: null });
    }
  });
});
