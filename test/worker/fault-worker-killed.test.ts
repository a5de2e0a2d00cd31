// Fault: a worker process is SIGKILLed in the middle of a page. Two `scriptorium work` child
// processes share a Redis and a storage folder; one is killed while its engine reads a page. Its
// lock expires, the other worker takes the page over, every document completes, and every page is
// read to the end exactly once.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import type { DocumentResultJson, PageResultJson } from '../../src/jobs/result-json.js';
import { enqueueDocuments, type QueuedDocument } from '../../src/producer/enqueue.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { READING_LINE } from '../support/fault-engine.js';
import { writeThreePageReports } from '../support/make-documents.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';
import { waitUntil, WorkerProcess, type Exit } from '../support/worker-processes.js';

const OCR: OcrJobOptions = { variant: 'v3', task: 'parse', mode: 'tiny', dpi: 36, maxNewTokens: 8 };

describe('a worker killed mid-page', { skip: REDIS_SERVER_MISSING }, () => {
  let redis: EmbeddedRedis;
  let root: string;
  let storage: FileStorage;
  let documents: QueuedDocument[];
  let victim: WorkerProcess;
  let survivor: WorkerProcess;
  let victimExit: Exit;

  before(async () => {
    redis = await startEmbeddedRedis();
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-fault-killed-'));
    storage = new FileStorage(path.join(root, 'storage'));
    const inputs = await writeThreePageReports(root);
    documents = (await enqueueDocuments(inputs, { ocr: OCR, storage, connection: redisOptions(redis.url, 'client') })).queued;

    const args = ['--model', await tinyCheckpoint('v3'), '--storage', storage.root, '--threads', '1', '--batch', '1', '--concurrency', '1'];
    args.push('--lock-duration', '2', '--stalled-interval', '1');
    // Each engine call waits a second first, so that the kill lands in the middle of a page.
    const env = { REDIS_URL: redis.url, SCRIPTORIUM_TEST_SLOW_MS: '1000' };
    victim = new WorkerProcess({ args, env, faults: true });
    survivor = new WorkerProcess({ args, env, faults: true });
    await victim.waitForOutput(READING_LINE);
    victim.child.kill('SIGKILL');
    victimExit = await victim.exited;
    await waitUntil(async () => (await Promise.all(documents.map(({ docId }) => storage.exists(`results/${docId}/_DONE`)))).every(Boolean), 60_000, 'every document done');
  });

  after(async () => {
    await survivor?.stop();
    await redis?.close();
    await rm(root, { recursive: true, force: true });
  });

  const pagesDone = () => [...victim.logLines(), ...survivor.logLines()].filter((line) => line.msg === 'page done');

  test('the killed worker died by SIGKILL while reading a page it never finished', () => {
    assert.deepEqual(victimExit, { code: null, signal: 'SIGKILL' });
    assert.deepEqual(victim.logLines().filter((line) => line.msg === 'page done'), []);
  });

  test('every document is complete, each page listed once and none failed', async () => {
    for (const { docId } of documents) {
      const document = JSON.parse(await readFile(path.join(storage.root, `results/${docId}/document.json`), 'utf8')) as DocumentResultJson;
      assert.deepEqual(document.pages.map(({ page }) => page), [1, 2, 3]);
      assert.deepEqual(document.failedPages, []);
    }
  });

  test('every page was read to the end exactly once', () => {
    const done = pagesDone().map((line) => `${line.docId} ${line.page}`).sort();
    const expected = documents.flatMap(({ docId }) => [1, 2, 3].map((page) => `${docId} ${page}`)).sort();
    assert.deepEqual(done, expected);
  });

  test('the page the killed worker held was taken over on its second try', async () => {
    const retried = pagesDone().filter((line) => line.attempt === 2);
    assert.equal(retried.length, 1, JSON.stringify(retried));
    const { docId, page } = retried[0] as { docId: string; page: number };
    const json = JSON.parse(await readFile(path.join(storage.root, `results/${docId}/pages/000${page}.json`), 'utf8')) as PageResultJson;
    assert.equal(json.worker.attempt, 2);
  });
});
