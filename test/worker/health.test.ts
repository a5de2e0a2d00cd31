// A worker's health as its supervisor sees it: /healthz (event loop responsive) and /readyz (model
// loaded, Redis reachable, not stopping) on the metrics port.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { pino } from 'pino';

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
