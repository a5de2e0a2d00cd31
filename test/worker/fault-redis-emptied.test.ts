// Fault: Redis loses its data mid-run (FLUSHALL, as a server restarted without persistence would). A
// worker (`scriptorium work`) and the API (`scriptorium serve`) run as child processes; after the
// first pages are done every key is gone. Both keep running and say that Redis lost its data;
// `scriptorium reconcile` then queues the unfinished documents again, the worker completes them, and
// every page is read once, but for the one being read when Redis was emptied: its job is gone, so its
// try cannot complete and is discarded, and the page is read again once reconciled.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import type { DocumentResultJson } from '../../src/jobs/result-json.js';
import { documentResultKeys } from '../../src/jobs/storage-layout.js';
import { enqueueDocuments, type QueuedDocument } from '../../src/producer/enqueue.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { READING_LINE } from '../support/fault-engine.js';
import { writeThreePageReports } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';
import { MAIN, waitUntil, WorkerProcess } from '../support/worker-processes.js';

const OCR: OcrJobOptions = { variant: 'v3', task: 'parse', mode: 'tiny', dpi: 36, maxNewTokens: 8 };
const KEY = 'redis-emptied-test-key';
const LOST_LINE = 'Redis lost its data';

describe('Redis emptied mid-run, then reconcile', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let root: string;
  let storage: FileStorage;
  let documents: QueuedDocument[];
  let worker: WorkerProcess;
  let serve: ChildProcess;
  let serveLog = '';
  let api = '';
  let reconcile: { code: number | null; stdout: string; stderr: string };
  let storedAtFlush: number;
  let readAtFlush: number;

  const storedPages = async (): Promise<number> => {
    const counts = await Promise.all(documents.map(async ({ docId }) => (await readdir(path.join(storage.root, 'results', docId, 'pages')).catch(() => [])).filter((name) => name.endsWith('.json')).length));
    return counts.reduce((sum, count) => sum + count, 0);
  };
  const count = (text: string, part: string) => text.split(part).length - 1;
  const triesLeft = async (): Promise<number> => {
    const counts = await Promise.all(documents.map(async ({ docId }) => (await readdir(path.join(storage.root, 'results', docId, 'attempts')).catch(() => [])).length));
    return counts.reduce((sum, count) => sum + count, 0);
  };
  const pagesRead = () => worker.logLines().filter((line) => line.msg === 'page done').length;

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-fault-emptied-'));
    storage = new FileStorage(path.join(root, 'storage'));
    const inputs = await writeThreePageReports(root);
    documents = (await enqueueDocuments(inputs, { ocr: OCR, storage, connection: redisOptions(redis.url, 'client') })).queued;

    serve = spawn(process.execPath, [MAIN, 'serve', '--port', '0', '--variant', 'v3', '--to', storage.root], {
      env: { ...process.env, REDIS_URL: redis.url, SCRIPTORIUM_API_KEYS: `ci:sha256:${createHash('sha256').update(KEY).digest('hex')}` },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    serve.stderr?.on('data', (chunk: Buffer) => (serveLog += chunk.toString()));
    await waitUntil(() => /"url":"http:\/\/[^"]+"/.test(serveLog) || serve.exitCode !== null, 30_000, 'serve listening');
    api = /"url":"(http:\/\/[^"]+)"/.exec(serveLog)?.[1] ?? '';
    assert.notEqual(api, '', serveLog);

    const args = ['--model', await tinyCheckpoint('v3'), '--storage', storage.root, '--threads', '1', '--batch', '1', '--concurrency', '1'];
    // Each engine call waits first, so that Redis is emptied while pages are left.
    worker = new WorkerProcess({ args, env: { REDIS_URL: redis.url, SCRIPTORIUM_TEST_SLOW_MS: '500' }, faults: true });
    await waitUntil(async () => (await storedPages()) >= 2, 60_000, 'the first pages done');
    await redis.flush();
    await Promise.all([worker.waitForOutput(LOST_LINE), waitUntil(() => serveLog.includes(LOST_LINE), 30_000, 'serve saying Redis lost its data')]);
    // Wait until the worker reads none, and every try it made is committed or discarded.
    await waitUntil(async () => count(worker.stderr, READING_LINE) === pagesRead() && (await triesLeft()) === 0, 30_000, 'the worker idle');
    storedAtFlush = await storedPages();
    readAtFlush = pagesRead();

    reconcile = await new Promise((resolve) => {
      execFile(process.execPath, [MAIN, 'reconcile', '--storage', storage.root], { env: { ...process.env, REDIS_URL: redis.url }, timeout: 60_000 }, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      });
    });
    await waitUntil(async () => (await Promise.all(documents.map(({ docId }) => storage.exists(documentResultKeys(docId).done)))).every(Boolean), 90_000, 'every document done');
  });

  after(async () => {
    await worker?.stop();
    if (serve?.exitCode === null) serve.kill('SIGTERM');
    await rm(root, { recursive: true, force: true });
  });

  test('the worker and serve keep running and log that Redis lost its data, naming the reconcile command', () => {
    const lost = worker.logLines().filter((line) => String(line.msg).startsWith(LOST_LINE));
    assert.equal(lost.length, 1);
    assert.match(String(lost[0].msg), new RegExp(`scriptorium reconcile --storage ${storage.url}`));
    assert.equal(worker.child.exitCode, null);
    assert.equal(count(serveLog, LOST_LINE), 1);
    assert.equal(serve.exitCode, null);
  });

  test('reconcile queues the unfinished documents with exactly their pages without results', () => {
    assert.equal(reconcile.code, 0, reconcile.stderr);
    const left = 2 * 3 - storedAtFlush;
    assert.ok(left > 0, 'some pages were left when Redis was emptied');
    const queued = reconcile.stdout.split('\n').filter((line) => line.includes(': queued again: '));
    const pagesQueued = queued.map((line) => Number(/queued again: (\d+) of 3 pages/.exec(line)?.[1])).reduce((sum, pages) => sum + pages, 0);
    assert.equal(pagesQueued, left, reconcile.stdout);
    assert.match(reconcile.stdout, new RegExp(`^2 staged documents in ${storage.url}: \\d finished, 0 in the queue, ${queued.length} queued again \\(${left} pages? to read\\), 0 cannot be queued$`, 'm'));
  });

  test('every document is complete, every page read once but the one being read when Redis was emptied', async () => {
    for (const { docId } of documents) {
      const document = JSON.parse(await readFile(path.join(storage.root, documentResultKeys(docId).json), 'utf8')) as DocumentResultJson;
      assert.deepEqual(document.pages.map(({ page }) => page), [1, 2, 3]);
      assert.deepEqual(document.failedPages, []);
    }
    const done = worker.logLines().filter((line) => line.msg === 'page done').map((line) => `${String(line.docId)}:${String(line.page)}`);
    assert.deepEqual([...new Set(done)].sort(), documents.flatMap(({ docId }) => [1, 2, 3].map((page) => `${docId}:${page}`)).sort());
    // One page at a time: at most one was read but not committed when Redis lost its job.
    const lost = readAtFlush - storedAtFlush;
    assert.ok(lost === 0 || lost === 1, `${readAtFlush} pages read, ${storedAtFlush} stored at the loss`);
    assert.equal(done.length, 2 * 3 + lost);
  });

  test('serve answers after the loss: ready, and the status of a reconciled document', async () => {
    assert.equal((await fetch(new URL('/readyz', api))).status, 200);
    const response = await fetch(new URL(`/v1/documents/${documents[1].docId}`, api), { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { state: string }).state, 'completed');
  });
});
