// What a running worker shows of itself: its Prometheus metrics, its entry among the live workers,
// and `scriptorium status` (live workers, throughput and ETA), against a real Redis with an
// in-process worker on a tiny V3 checkpoint.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import { Redis } from 'ioredis';
import { pino } from 'pino';

import { startOcrWorkers, type OcrWorkers } from '../../src/worker/ocr-workers.js';
import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import { PAGE_FLAGS } from '../../src/jobs/page-flags.js';
import type { PageResultJson } from '../../src/jobs/result-json.js';
import { enqueueDocuments } from '../../src/producer/enqueue.js';
import { DocumentWatcher } from '../../src/queue/document-watcher.js';
import { KeyQuotas } from '../../src/queue/key-quotas.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { listLiveWorkers } from '../../src/queue/live-workers.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { serveMetrics, type MetricsServer } from '../../src/worker/worker-metrics.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';
import { MAIN, waitUntil } from '../support/worker-processes.js';

const OCR: OcrJobOptions = { variant: 'v3', task: 'parse', mode: 'tiny', dpi: 36, maxNewTokens: 4 };

describe('a running worker seen from outside', { skip: REDIS_SERVER_MISSING }, () => {
  let redis: EmbeddedRedis;
  let client: Redis;
  let root: string;
  let storage: FileStorage;
  let workers: OcrWorkers;
  let metrics: MetricsServer;
  let docId: string;

  const enqueuePdf = async (pages: number, lines: number, ocr = OCR) => {
    const input = path.join(root, `doc-${lines}.pdf`);
    await writeFile(input, await makePdf(Array.from({ length: pages }, () => LETTER), lines));
    return enqueueDocuments([input], { ocr, storage, connection: redisOptions(redis.url, 'client') });
  };
  const status = async () => (await promisify(execFile)(process.execPath, [MAIN, 'status'], { env: { ...process.env, REDIS_URL: redis.url } })).stdout;
  const scrape = async () => (await fetch(`http://127.0.0.1:${new URL(metrics.url).port}/metrics`)).text();

  before(async () => {
    redis = await startEmbeddedRedis();
    client = new Redis(redis.url);
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-observability-'));
    storage = new FileStorage(path.join(root, 'storage'));
    const logger = pino({ level: 'silent' });
    metrics = await serveMetrics({ port: 0, host: '127.0.0.1', redisUrl: redis.url, logger });
    workers = await startOcrWorkers({
      model: { dir: await tinyCheckpoint('v3'), synthetic: true },
      checkpointId: 'sha256:tiny-v3',
      threads: 1,
      storage,
      redisUrl: redis.url,
      logger,
      heartbeatMs: 100,
    });
    const watcher = await DocumentWatcher.start(redisOptions(redis.url, 'worker'));
    try {
      docId = (await enqueuePdf(2, 3)).queued[0].docId;
      await watcher.waitFor([docId]);
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

  const pageJsons = async () =>
    Promise.all([1, 2].map(async (page) => JSON.parse((await storage.get(`results/${docId}/pages/000${page}.json`)).toString()) as PageResultJson));

  test('the metrics count the pages done and their stage times', async () => {
    const text = await scrape();
    assert.match(text, /^scriptorium_pages_done_total 2$/m);
    assert.doesNotMatch(text, /^scriptorium_pages_failed_total\{/m);
    for (const stage of ['fetch', 'render', 'encode', 'prefill', 'decode', 'store', 'total']) {
      assert.match(text, new RegExp(`^scriptorium_page_stage_seconds_count\\{stage="${stage}"\\} 2$`, 'm'), stage);
    }
  });

  test('the metrics count the generated tokens the page results report, and the decode time', async () => {
    const text = await scrape();
    const generated = (await pageJsons()).reduce((sum, page) => sum + page.tokens.generated, 0);
    assert.ok(generated > 0);
    assert.match(text, new RegExp(`^scriptorium_generated_tokens_total ${generated}$`, 'm'));
    const decodeSeconds = Number(/^scriptorium_decode_seconds_total (\S+)$/m.exec(text)?.[1]);
    assert.ok(decodeSeconds > 0, `decode seconds ${decodeSeconds}`);
  });

  test('the metrics and status count the flagged pages per flag, as their results carry them', async () => {
    const counts = new Map<string, number>();
    for (const page of await pageJsons()) for (const flag of page.flags ?? []) counts.set(flag, (counts.get(flag) ?? 0) + 1);
    assert.equal(counts.get('max_tokens'), 2, 'the 4-token budget flags both pages');
    const text = await scrape();
    for (const [flag, count] of counts) assert.match(text, new RegExp(`^scriptorium_pages_flagged_total\\{reason="${flag}"\\} ${count}$`, 'm'), flag);
    const expected = PAGE_FLAGS.filter((flag) => counts.has(flag)).map((flag) => `${counts.get(flag)} ${flag}`);
    assert.match(await status(), new RegExp(`^pages flagged in 10 min: ${expected.join(', ')}$`, 'm'));
  });

  test('the metrics hold the queue depths, read at the scrape, and the process metrics', async () => {
    assert.match(await scrape(), /^scriptorium_queue_jobs\{queue="\{scriptorium\}:pages-v3",state="waiting"\} 0$/m);
    await client.lpush('{scriptorium}:pages-v3:wait', 'made-up-job-id');
    try {
      const text = await scrape();
      assert.match(text, /^scriptorium_queue_jobs\{queue="\{scriptorium\}:pages-v3",state="waiting"\} 1$/m);
      assert.match(text, /^process_cpu_user_seconds_total /m);
    } finally {
      await client.del('{scriptorium}:pages-v3:wait');
    }
  });

  test("the metrics hold each API key's usage by name, read at the scrape", async () => {
    const quotas = new KeyQuotas(client);
    await quotas.recordKeys([{ name: 'archive', quota: { priorityClass: 'bulk', documentsInFlight: 5 } }]);
    await quotas.admit('archive', { priorityClass: 'bulk', documentsInFlight: 5 }, { docId: 'c'.repeat(32), pages: 7 });
    const text = await scrape();
    assert.match(text, /^scriptorium_api_key_pages_today\{key="archive"\} 7$/m);
    assert.match(text, /^scriptorium_api_key_documents_in_flight\{key="archive"\} 1$/m);
  });

  test('the metrics name the backend and device the engine runs on', async () => {
    const backend = workers.engine.model.backend;
    assert.match(backend, /^cpu-\w+$/);
    assert.match(await scrape(), new RegExp(`^scriptorium_worker_info\\{backend="${backend}",variant="v3"\\} 1$`, 'm'));
  });

  test('the metrics endpoint answers 404 elsewhere', async () => {
    const response = await fetch(`http://127.0.0.1:${new URL(metrics.url).port}/`);
    assert.equal(response.status, 404);
  });

  test('the worker is a live worker with its backend and the pages it did', async () => {
    await waitUntil(async () => (await listLiveWorkers(client))[0]?.pagesDone === 2, 5_000, 'a heartbeat with the pages done');
    const [worker, ...others] = await listLiveWorkers(client);
    assert.deepEqual(others, []);
    assert.deepEqual(
      { host: worker.host, pid: worker.pid, backend: worker.backend, threads: worker.threads, variant: worker.variant, currentJobs: worker.currentJobs },
      { host: os.hostname(), pid: process.pid, backend: `cpu-${workers.engine.model.kernels}`, threads: 1, variant: 'v3', currentJobs: [] },
    );
    assert.equal(worker.checkpoint, workers.checkpointId);
  });

  test('status lists the live worker and what the queues completed', async () => {
    const out = await status();
    assert.match(out, new RegExp(`^${os.hostname()} pid ${process.pid} +cpu-\\S+ ×1 +v3 +idle +2 +0 +\\d+ s ago$`, 'm'));
    // The rate depends on where the minute boundaries fell; the counts and what is left do not.
    assert.match(out, /^pages \(all variants\) +2 pages +[12]\.\d +0 pages +nothing left$/m);
    assert.match(out, /^\{scriptorium\}:documents +1 documents +[01]\.\d +0 documents +nothing left$/m);
  });

  test('status counts queued pages per kind of page, and gives no time left once no worker is alive', async () => {
    await workers.close(); // nothing reads the new pages
    // One V3 single-pass job for all three pages: what is left counts pages, not jobs.
    await enqueuePdf(3, 4, { ...OCR, task: 'parse-multi' });
    const out = await status();
    assert.match(out, /^\{scriptorium\}:pages-v3 +0 +0 +1 +0 /m);
    // 2 parse pages were done within the current minute or the one before; the 3 left are parse-multi pages.
    assert.match(out, /^pages \(all variants\) +2 pages +[12]\.\d +3 pages +no live workers$/m);
    assert.match(out, /^  v3-parse-multi-tiny +0 pages +0\.0 +3 pages +no live workers$/m);
    assert.match(out, /^  v3-parse-tiny +2 pages +[12]\.\d +0 pages +nothing left$/m);
    assert.match(out, /^no live workers/m);
  });
});
