// A GPU worker (the first Vulkan device, llvmpipe in CI) with its memory budget capped: a page whose
// KV cache can never fit fails with the reason while the worker reads the next page, and the page
// results, the live-worker registry and the metrics name the backend and device. Skipped where the
// GPU backend is absent, unless SCRIPTORIUM_REQUIRE_VULKAN=1 (as .ci/run sets it) makes that a failure.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Redis } from 'ioredis';
import { pino } from 'pino';

import { gpuBackendReport } from '../../src/engine/compute-device.js';
import { GPU_MEMORY_CAP_VARIABLE } from '../../src/engine/device-memory.js';
import { NativeModel } from '../../src/engine/native-model.js';
import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import type { DocumentResultJson, PageResultJson } from '../../src/jobs/result-json.js';
import { enqueueDocuments } from '../../src/producer/enqueue.js';
import { DocumentWatcher } from '../../src/queue/document-watcher.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { listLiveWorkers } from '../../src/queue/live-workers.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { startOcrWorkers, type OcrWorkers } from '../../src/worker/ocr-workers.js';
import { serveMetrics, type MetricsServer } from '../../src/worker/worker-metrics.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const report = await gpuBackendReport();
const noGpu = report.available || process.env.SCRIPTORIUM_REQUIRE_VULKAN === '1' ? false : `no GPU backend: ${report.reason}`;
const MIB = 2 ** 20;

describe('a GPU worker with a capped memory budget', { skip: REDIS_SERVER_MISSING || noGpu }, () => {
  let redis: EmbeddedRedis;
  let client: Redis;
  let root: string;
  let storage: FileStorage;
  let workers: OcrWorkers;
  let metrics: MetricsServer;
  let fitting: string;
  let tooLong: string;

  before(async () => {
    redis = await startEmbeddedRedis();
    client = new Redis(redis.url);
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-device-worker-'));
    storage = new FileStorage(path.join(root, 'storage'));
    const logger = pino({ level: 'silent' });
    // V1 (no R-SWA window, so a cache grows with the tokens generated), 23 MiB above what the loaded
    // weights hold: a page of 4 new tokens fits beside its activations; one that may fill the tiny
    // model's 8,192 positions is counted for its prompt and 1,000 planned tokens (9.8 MiB of half
    // cache, the default), which never fit beside them.
    const dir = await tinyCheckpoint('v1');
    const probe = await NativeModel.load(dir, { device: { kind: 'gpu', index: 0 }, threads: 1 });
    process.env[GPU_MEMORY_CAP_VARIABLE] = String(Math.ceil(probe.deviceMemory!.usedBytes / MIB) + 23);
    try {
      workers = await startOcrWorkers({
        model: { dir, synthetic: true },
        checkpointId: 'sha256:tiny-v1',
        device: { kind: 'gpu', index: 0 },
        threads: 1,
        storage,
        redisUrl: redis.url,
        logger,
        heartbeatMs: 100,
      });
    } finally {
      delete process.env[GPU_MEMORY_CAP_VARIABLE];
    }
    metrics = await serveMetrics({ port: 0, host: '127.0.0.1', redisUrl: redis.url, logger });
    const enqueue = async (name: string, maxNewTokens: number) => {
      const input = path.join(root, `${name}.pdf`);
      await writeFile(input, await makePdf([LETTER], name.length));
      const ocr: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens };
      return (await enqueueDocuments([input], { ocr, storage, attempts: 1, connection: redisOptions(redis.url, 'client') })).queued[0].docId;
    };
    const watcher = await DocumentWatcher.start(redisOptions(redis.url, 'worker'));
    try {
      tooLong = await enqueue('too-long', 8000);
      fitting = await enqueue('fitting', 4);
      await watcher.waitFor([tooLong, fitting]);
    } finally {
      await watcher.close();
    }
  });

  after(async () => {
    await workers?.close();
    await metrics?.close();
    client?.disconnect();
    await redis?.close();
    await rm(root, { recursive: true, force: true });
  });

  const documentJson = async (docId: string) => JSON.parse((await storage.get(`results/${docId}/document.json`)).toString()) as DocumentResultJson;

  test('the page that can never fit fails with the numbers', async () => {
    const { failedPages } = await documentJson(tooLong);
    assert.equal(failedPages.length, 1);
    assert.match(failedPages[0].reason, /out of device memory on vulkan:.+: the KV cache of \d+ tokens needs up to 9\.8 MiB, and the .+ budget leaves/);
  });

  test('the worker goes on and reads the next page on the device, naming it in the result', async () => {
    assert.deepEqual((await documentJson(fitting)).failedPages, []);
    const page = JSON.parse((await storage.get(`results/${fitting}/pages/0001.json`)).toString()) as PageResultJson;
    assert.equal(page.worker.backend, workers.engine.model.backend);
    assert.match(page.worker.backend, /^vulkan:.+/);
  });

  test('the live-worker registry and the metrics name the backend and device', async () => {
    const backend = workers.engine.model.backend;
    const [worker] = await listLiveWorkers(client);
    assert.equal(worker.backend, backend);
    const text = await (await fetch(`http://127.0.0.1:${new URL(metrics.url).port}/metrics`)).text();
    assert.ok(text.includes(`scriptorium_worker_info{backend="${backend}",variant="v1"} 1`), text);
  });
});
