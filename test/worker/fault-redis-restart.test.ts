// Fault: Redis dies mid-run and comes back from its append-only file. A producer (`scriptorium
// enqueue --wait`) and two workers (`scriptorium work`) run as child processes; Redis is SIGKILLed
// after the first pages are done and started again on the same port and directory. Everyone
// reconnects, the producer hears every document finish, and no page is lost.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { DocumentResultJson } from '../../src/jobs/result-json.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { REDIS_SERVER_MISSING, startPersistentRedis, type PersistentRedis } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';
import { MAIN, waitUntil, WorkerProcess } from '../support/worker-processes.js';

const DOCUMENTS = 4;
const PAGES_PER_DOCUMENT = 2;

describe('Redis restarted mid-run', { skip: REDIS_SERVER_MISSING }, () => {
  let redis: PersistentRedis;
  let root: string;
  let storage: FileStorage;
  let workers: WorkerProcess[] = [];
  let producer: { code: number | null; stdout: string; stderr: string };
  let killedAt: number;
  let restartedAt: number;

  const finishedPages = async (): Promise<number> => {
    const results = path.join(storage.root, 'results');
    const docs = await readdir(results).catch(() => []);
    const counts = await Promise.all(docs.map(async (doc) => (await readdir(path.join(results, doc, 'pages')).catch(() => [])).filter((name) => name.endsWith('.json')).length));
    return counts.reduce((sum, count) => sum + count, 0);
  };

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-fault-redis-'));
    await mkdir(path.join(root, 'redis'));
    redis = await startPersistentRedis(path.join(root, 'redis'));
    storage = new FileStorage(path.join(root, 'storage'));
    const inputs = path.join(root, 'inputs');
    await mkdir(inputs);
    for (let i = 0; i < DOCUMENTS; i++) {
      await writeFile(path.join(inputs, `doc-${i}.pdf`), await makePdf(Array.from({ length: PAGES_PER_DOCUMENT }, () => LETTER), i + 3));
    }
    const model = await tinyCheckpoint('v3');
    const env = { REDIS_URL: redis.url, SCRIPTORIUM_TEST_SLOW_MS: '700' };
    const args = ['--model', model, '--storage', storage.root, '--threads', '1', '--batch', '1', '--concurrency', '1', '--lock-duration', '10', '--stalled-interval', '2'];
    workers = [0, 1].map(() => new WorkerProcess({ args, env, faults: true }));
    await Promise.all(workers.map((worker) => worker.waitForOutput('"msg":"worker ready"')));

    const enqueueArgs = [MAIN, 'enqueue', inputs, '--to', storage.root, '--model', model, '--mode', 'tiny', '--dpi', '36', '--max-tokens', '8', '--wait'];
    const producerDone = new Promise<typeof producer>((resolve) => {
      execFile(process.execPath, enqueueArgs, { env: { ...process.env, REDIS_URL: redis.url }, timeout: 90_000 }, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      });
    });
    await waitUntil(async () => (await finishedPages()) >= 2, 30_000, 'the first pages done');
    killedAt = Date.now();
    await redis.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await redis.start();
    restartedAt = Date.now();
    producer = await producerDone;
  });

  after(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await redis?.close();
    await rm(root, { recursive: true, force: true });
  });

  test('the producer hears every document finish and exits 0', () => {
    assert.equal(producer.code, 0, `stdout:\n${producer.stdout}\nstderr:\n${producer.stderr}`);
    assert.match(producer.stdout, new RegExp(`^${DOCUMENTS} documents finished: ${DOCUMENTS} complete, 0 with failed pages, 0 failed$`, 'm'));
  });

  test('Redis went down while pages were still being read, and pages were read after it came back', () => {
    const times = workers.flatMap((worker) => worker.logLines()).filter((line) => line.msg === 'page done').map((line) => Number(line.time));
    assert.ok(times.some((time) => time < killedAt), 'no page done before the kill');
    assert.ok(times.some((time) => time > restartedAt), 'no page done after the restart');
  });

  test('a restart that kept the data is no data loss: no worker says Redis lost it', () => {
    for (const worker of workers) assert.ok(!worker.stderr.includes('Redis lost its data'), worker.stderr);
  });

  test('every document is complete with every page', async () => {
    const results = await readdir(path.join(storage.root, 'results'));
    assert.equal(results.length, DOCUMENTS);
    for (const docId of results) {
      const document = JSON.parse(await readFile(path.join(storage.root, 'results', docId, 'document.json'), 'utf8')) as DocumentResultJson;
      assert.deepEqual(document.pages.map(({ page }) => page), [1, 2]);
      assert.deepEqual(document.failedPages, []);
    }
  });
});
