// Recycled workers (`work --max-pages`, `--max-rss`): the limits themselves, then `scriptorium work`
// child processes under a supervisor that restarts whatever exits. A worker with --max-pages 3
// reads exactly 3 pages (jobs it claimed beyond them go back untried), exits with
// EXIT_WORKER_RECYCLED, and the fresh worker reads the rest: nothing is lost or read twice. A
// --max-rss below what the process already holds recycles it after its first page the same way.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import type { DocumentResultJson } from '../../src/jobs/result-json.js';
import { documentResultKeys } from '../../src/jobs/storage-layout.js';
import { enqueueDocuments, type QueuedDocument } from '../../src/producer/enqueue.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { EXIT_WORKER_RECYCLED, WorkerRecycling } from '../../src/worker/worker-recycling.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';
import { waitUntil, WorkerProcess, WorkerSupervisor } from '../support/worker-processes.js';

const OCR: OcrJobOptions = { variant: 'v3', task: 'parse', mode: 'tiny', dpi: 36, maxNewTokens: 8 };

describe('recycle limits', () => {
  test('max-pages: pages are taken until the limit, then none; the request says why', async () => {
    const recycling = new WorkerRecycling({ maxPages: 3 }, () => 1000);
    assert.equal(recycling.admit(1), true);
    assert.equal(recycling.admit(1), true);
    assert.equal(recycling.admit(1), true);
    assert.equal(recycling.admit(1), false);
    assert.deepEqual(await recycling.requested, { reason: 'max-pages', pagesTaken: 3, rssBytes: 1000, maxPages: 3 });
  });

  test('max-pages: a page group counts all its pages', async () => {
    const recycling = new WorkerRecycling({ maxPages: 4 }, () => 1000);
    assert.equal(recycling.admit(3), true);
    assert.equal(recycling.admit(3), true);
    assert.equal(recycling.admit(1), false);
    assert.equal((await recycling.requested).pagesTaken, 6);
  });

  test('max-rss: read as pages settle; past the limit, no page is taken', async () => {
    let rss = 100;
    const recycling = new WorkerRecycling({ maxRssBytes: 150 }, () => rss);
    assert.equal(recycling.admit(1), true);
    recycling.pageSettled();
    rss = 151;
    assert.equal(recycling.admit(1), true);
    recycling.pageSettled();
    assert.equal(recycling.admit(1), false);
    assert.deepEqual(await recycling.requested, { reason: 'max-rss', pagesTaken: 2, rssBytes: 151, maxRssBytes: 150 });
  });

  test('without limits it never asks', async () => {
    const recycling = new WorkerRecycling({}, () => Number.MAX_SAFE_INTEGER);
    for (let i = 0; i < 100; i++) {
      assert.equal(recycling.admit(1), true);
      recycling.pageSettled();
    }
    const asked = await Promise.race([recycling.requested.then(() => true), new Promise((resolve) => setImmediate(() => resolve(false)))]);
    assert.equal(asked, false);
  });
});

describe('recycled worker processes', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let root: string;
  let model: string;

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-recycle-'));
    model = await tinyCheckpoint('v3');
  });

  after(() => rm(root, { recursive: true, force: true }));

  async function enqueue(name: string, pages: number, storage: FileStorage): Promise<QueuedDocument> {
    const input = path.join(root, `${name}.pdf`);
    await writeFile(input, await makePdf(Array.from({ length: pages }, () => LETTER), pages));
    const [queued] = (await enqueueDocuments([input], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client') })).queued;
    return queued;
  }

  const workerArgs = (storage: FileStorage, ...more: string[]) => ['--model', model, '--storage', storage.root, '--threads', '1', ...more];
  const pagesDone = (worker: WorkerProcess) =>
    worker
      .logLines()
      .filter((line) => line.msg === 'page done')
      .map((line) => Number(line.page));

  test('--max-pages 3: exactly 3 pages, exit status 75, and a fresh worker reads the rest', async () => {
    await redis.flush();
    const storage = new FileStorage(path.join(root, 'max-pages'));
    const document = await enqueue('five-pages', 5, storage);
    // Batch 2 holds 4 page jobs: the fourth one claimed goes back to the queue untried.
    const supervisor = new WorkerSupervisor(1, { args: workerArgs(storage, '--batch', '2', '--max-pages', '3'), env: { REDIS_URL: redis.url } });
    try {
      await waitUntil(() => storage.exists(documentResultKeys(document.docId).done), 60_000, 'the document done');
    } finally {
      await supervisor.stop();
    }
    const [first, second] = supervisor.workers;
    assert.equal(supervisor.workers.length, 2);
    assert.deepEqual(supervisor.exits[0], { code: EXIT_WORKER_RECYCLED, signal: null });
    assert.equal(pagesDone(first).length, 3);
    assert.equal(pagesDone(second).length, 2);
    assert.deepEqual([...pagesDone(first), ...pagesDone(second)].sort((a, b) => a - b), [1, 2, 3, 4, 5]);
    const recycled = first.logLines().find((line) => line.msg?.toString().startsWith('recycling'));
    assert.deepEqual(
      { reason: recycled?.reason, pagesTaken: recycled?.pagesTaken, maxPages: recycled?.maxPages, exitCode: recycled?.exitCode },
      { reason: 'max-pages', pagesTaken: 3, maxPages: 3, exitCode: EXIT_WORKER_RECYCLED },
    );
    assert.equal(typeof recycled?.rssBytes, 'number');
    const assembled = JSON.parse(await readFile(path.join(storage.root, documentResultKeys(document.docId).json), 'utf8')) as DocumentResultJson;
    assert.deepEqual(assembled.pages.map(({ page }) => page), [1, 2, 3, 4, 5]);
    assert.deepEqual(assembled.failedPages, []);
  });

  test('SCRIPTORIUM_MAX_RSS below what the worker holds: recycled after its first page, with the figures', async () => {
    await redis.flush();
    const storage = new FileStorage(path.join(root, 'max-rss'));
    const document = await enqueue('two-pages', 2, storage);
    const worker = new WorkerProcess({ args: workerArgs(storage, '--batch', '1', '--concurrency', '1'), env: { REDIS_URL: redis.url, SCRIPTORIUM_MAX_RSS: '1M' } });
    const exit = await worker.exited;
    assert.deepEqual(exit, { code: EXIT_WORKER_RECYCLED, signal: null }, worker.stderr);
    assert.equal(pagesDone(worker).length, 1);
    assert.ok(worker.logLines().some((line) => line.msg?.toString().includes('already past its resident-memory limit')));
    const recycled = worker.logLines().find((line) => line.msg?.toString().startsWith('recycling'));
    assert.equal(recycled?.reason, 'max-rss');
    assert.equal(recycled?.maxRssBytes, 2 ** 20);
    assert.ok(Number(recycled?.rssBytes) > 2 ** 20);
    assert.equal(await storage.exists(documentResultKeys(document.docId).done), false);
  });
});
