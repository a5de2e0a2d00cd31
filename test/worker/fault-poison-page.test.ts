// Fault: a poison page that crashes or hangs the engine every time it is read. Workers are
// `scriptorium work` child processes with the fault-engine preload, restarted by a supervisor
// whenever they exit. The poison page ends as a failed page with a reason after a bounded number of
// dead or restarted workers, its document is still assembled, and the other documents complete.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import sharp from 'sharp';

import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import type { DocumentResultJson } from '../../src/jobs/result-json.js';
import { enqueueDocuments, type QueuedDocument } from '../../src/producer/enqueue.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { STALLED_PAGE_REASON } from '../../src/worker/document-worker.js';
import { POISON_PAGE } from '../support/fault-engine.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';
import { waitUntil, WorkerSupervisor } from '../support/worker-processes.js';

const OCR: OcrJobOptions = { variant: 'v3', task: 'parse', mode: 'tiny', dpi: 36, maxNewTokens: 8 };

describe('a poison page', { skip: REDIS_SERVER_MISSING }, () => {
  let redis: EmbeddedRedis;
  let root: string;
  let model: string;
  let poisonPng: Buffer;
  let runs = 0;

  before(async () => {
    redis = await startEmbeddedRedis();
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-fault-poison-'));
    model = await tinyCheckpoint('v3');
    poisonPng = await sharp({ create: { ...POISON_PAGE, channels: 3, background: { r: 90, g: 90, b: 90 } } }).png().toBuffer();
  });
  after(async () => {
    await redis?.close();
    await rm(root, { recursive: true, force: true });
  });

  interface Run {
    storage: FileStorage;
    poison: QueuedDocument;
    others: QueuedDocument[];
    supervisor: WorkerSupervisor;
  }

  /** Queues the poison image and two 2-page PDFs into fresh storage, then keeps two workers running until all are done. */
  async function runWithPoison(workerArgs: string[], fault: 'kill' | 'hang', attempts: number): Promise<Run> {
    const dir = path.join(root, `run-${++runs}`);
    const storage = new FileStorage(path.join(dir, 'storage'));
    await mkdir(dir);
    const inputs = [path.join(dir, 'poison.png'), path.join(dir, 'a.pdf'), path.join(dir, 'b.pdf')];
    await writeFile(inputs[0], poisonPng);
    await writeFile(inputs[1], await makePdf([LETTER, LETTER], 3));
    await writeFile(inputs[2], await makePdf([LETTER, LETTER], 4));
    const [poison, ...others] = (await enqueueDocuments(inputs, { ocr: OCR, storage, connection: redisOptions(redis.url, 'client'), attempts, backoffMs: 100 })).queued;
    const args = ['--model', model, '--storage', storage.root, '--threads', '1', ...workerArgs];
    const supervisor = new WorkerSupervisor(2, { args, env: { REDIS_URL: redis.url, SCRIPTORIUM_TEST_FAULT: fault }, faults: true });
    try {
      await waitUntil(
        async () => (await Promise.all([poison, ...others].map(({ docId }) => assembled(storage, docId)))).every(Boolean),
        75_000,
        'every document assembled',
      );
    } finally {
      await supervisor.stop();
    }
    return { storage, poison, others, supervisor };
  }

  /** _DONE, or _FAILED_PAGES for a document with a failed page. */
  async function assembled(storage: FileStorage, docId: string): Promise<boolean> {
    const markers = await Promise.all([`results/${docId}/_DONE`, `results/${docId}/_FAILED_PAGES`].map((key) => storage.exists(key)));
    return markers.some(Boolean);
  }

  /** Exits other than those of stopping the supervisor: 0, or SIGTERM for a worker stopped while it was still starting. */
  const abnormalExits = (run: Run) => run.supervisor.exits.filter((exit) => exit.code !== 0 && exit.signal !== 'SIGTERM');

  async function documentJson(storage: FileStorage, docId: string): Promise<DocumentResultJson> {
    return JSON.parse(await readFile(path.join(storage.root, `results/${docId}/document.json`), 'utf8')) as DocumentResultJson;
  }

  describe('that kills its worker', () => {
    let run: Run;

    before(async () => {
      // A page whose worker died more than once fails; each death is noticed within about 4 s.
      run = await runWithPoison(['--batch', '1', '--concurrency', '1', '--lock-duration', '2', '--stalled-interval', '1', '--max-stalled', '1'], 'kill', 3);
    });

    test('killed exactly two workers: the stalled limit bounds the tries', () => {
      assert.deepEqual(abnormalExits(run), [
        { code: null, signal: 'SIGKILL' },
        { code: null, signal: 'SIGKILL' },
      ]);
    });

    test('ends as a failed page with the reason, in an assembled document', async () => {
      const document = await documentJson(run.storage, run.poison.docId);
      assert.deepEqual(document.pages, []);
      assert.deepEqual(document.failedPages, [{ page: 1, reason: STALLED_PAGE_REASON }]);
    });

    test('leaves the other documents complete', async () => {
      for (const { docId } of run.others) assert.deepEqual((await documentJson(run.storage, docId)).failedPages, []);
    });
  });

  describe('that hangs the engine', () => {
    let run: Run;

    before(async () => {
      run = await runWithPoison(['--batch', '1', '--concurrency', '2', '--page-timeout', '2', '--hang-grace', '1'], 'hang', 2);
    });

    test('made a worker exit with status 70 on each of its two tries', () => {
      assert.deepEqual(abnormalExits(run), [
        { code: 70, signal: null },
        { code: 70, signal: null },
      ]);
    });

    test('ends as a failed page saying the engine did not return', async () => {
      const document = await documentJson(run.storage, run.poison.docId);
      assert.deepEqual(document.failedPages, [
        { page: 1, reason: 'the engine did not return within 3 s (page timeout and grace): its worker exits to be restarted' },
      ]);
    });

    test('leaves the other documents complete', async () => {
      for (const { docId } of run.others) assert.deepEqual((await documentJson(run.storage, docId)).failedPages, []);
    });
  });
});
