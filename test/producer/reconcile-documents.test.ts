// reconcileDocuments against a real Redis (no workers): after Redis lost its data, every staged
// document that is unfinished and has no job in Redis is queued again with exactly its pages without
// a stored result and its document job; finished, cancelled and still-queued documents are left
// alone; a dry run queues nothing; a second run queues nothing twice.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Queue } from 'bullmq';

import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import { cancelledMarkerKey, documentResultKeys, pageResultKey, stagedJobKey } from '../../src/jobs/storage-layout.js';
import { enqueueDocuments } from '../../src/producer/enqueue.js';
import { reconcileDocuments, type ReconcileOptions, type ReconcileOutcome } from '../../src/producer/reconcile-documents.js';
import { DOCUMENTS, pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';

const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 8 };
const NAMES = ['mid-run', 'done', 'failed-pages', 'cancelled', 'unrecorded', 'queued-after'] as const;

describe('reconcileDocuments', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let root: string;
  let storage: FileStorage;
  let documents: Queue;
  let pages: Queue;
  const docIds: Partial<Record<(typeof NAMES)[number], string>> = {};
  const docId = (name: (typeof NAMES)[number]) => docIds[name] ?? '';

  const enqueue = async (name: (typeof NAMES)[number]) => {
    const input = path.join(root, `${name}.pdf`);
    await writeFile(input, await makePdf([LETTER, LETTER, LETTER], NAMES.indexOf(name) + 2));
    const [queued] = (await enqueueDocuments([input], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client') })).queued;
    docIds[name] = queued.docId;
  };
  const reconcile = async (extra: Partial<ReconcileOptions> = {}): Promise<ReconcileOutcome[]> => {
    const outcomes: ReconcileOutcome[] = [];
    for await (const outcome of reconcileDocuments({ storage, connection: redisOptions(redis.url, 'client'), ...extra })) outcomes.push(outcome);
    return outcomes;
  };
  const byDocId = (outcomes: ReconcileOutcome[]) => new Map(outcomes.map((outcome) => [outcome.docId, outcome]));
  const pageJobIds = async () => (await pages.getJobs(['prioritized', 'waiting'])).map((job) => job.id).sort();

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-reconcile-'));
    storage = new FileStorage(path.join(root, 'storage'));
    const connection = redisOptions(redis.url, 'client');
    documents = new Queue(DOCUMENTS.name, { connection, prefix: DOCUMENTS.prefix });
    pages = new Queue(pageQueue('v1').name, { connection, prefix: pageQueue('v1').prefix });
    for (const name of NAMES.filter((name) => name !== 'queued-after')) await enqueue(name);
    // What workers had done when Redis lost everything.
    await storage.put(pageResultKey(docId('mid-run'), 1, 'json'), Buffer.from('{}'));
    await storage.put(documentResultKeys(docId('done')).done, Buffer.alloc(0));
    await storage.put(documentResultKeys(docId('failed-pages')).failedPages, Buffer.from('{}'));
    await storage.put(cancelledMarkerKey(docId('cancelled')), Buffer.alloc(0));
    await storage.delete(stagedJobKey(docId('unrecorded')));
    await redis.flush();
    await enqueue('queued-after');
  });

  after(async () => {
    await Promise.all([documents.close(), pages.close()]);
    await rm(root, { recursive: true, force: true });
  });

  test('a dry run says what it would queue and queues nothing', async () => {
    const found = byDocId(await reconcile({ dryRun: true }));
    assert.deepEqual(found.get(docId('mid-run')), { docId: docId('mid-run'), status: 'would-queue', uri: path.join(root, 'mid-run.pdf'), pageCount: 3, pagesToRead: 2 });
    assert.deepEqual(await pageJobIds(), [1, 2, 3].map((page) => `${docId('queued-after')}.p${page}-${page}`));
    assert.equal(await documents.getJob(docId('mid-run')), undefined);
  });

  test('each staged document: queued again, finished, cancelled, in the queue, or why it cannot be', async () => {
    const outcomes = await reconcile();
    // Several documents are looked at once; what was found still comes in docId order.
    assert.deepEqual(
      outcomes.map((outcome) => outcome.docId),
      Object.values(docIds).sort(),
    );
    const found = byDocId(outcomes);
    assert.equal(found.size, NAMES.length);
    assert.deepEqual(found.get(docId('mid-run')), { docId: docId('mid-run'), status: 'queued', uri: path.join(root, 'mid-run.pdf'), pageCount: 3, pagesToRead: 2 });
    assert.deepEqual(found.get(docId('done')), { docId: docId('done'), status: 'finished', marker: 'done' });
    assert.deepEqual(found.get(docId('failed-pages')), { docId: docId('failed-pages'), status: 'finished', marker: 'failed-pages' });
    assert.deepEqual(found.get(docId('cancelled')), { docId: docId('cancelled'), status: 'finished', marker: 'cancelled' });
    assert.deepEqual(found.get(docId('queued-after')), { docId: docId('queued-after'), status: 'in-queue', state: 'waiting-children' });
    const unrecorded = found.get(docId('unrecorded'));
    assert.equal(unrecorded?.status, 'not-queued');
    assert.match(unrecorded.reason, /staged without its document job/);
  });

  test('exactly the pages without a stored result are queued, under the document job that assembles them', async () => {
    const queuedAgain = [2, 3].map((page) => `${docId('mid-run')}.p${page}-${page}`);
    const alreadyQueued = [1, 2, 3].map((page) => `${docId('queued-after')}.p${page}-${page}`);
    assert.deepEqual(await pageJobIds(), [...queuedAgain, ...alreadyQueued].sort());
    const documentJob = await documents.getJob(docId('mid-run'));
    assert.equal(await documentJob?.getState(), 'waiting-children');
    assert.equal((await documentJob?.getDependencies())?.unprocessed?.length, 2);
  });

  test('a second run, one document at a time, finds the queued document in the queue and adds nothing', async () => {
    const before = await pageJobIds();
    const found = byDocId(await reconcile({ concurrency: 1 }));
    assert.deepEqual(found.get(docId('mid-run')), { docId: docId('mid-run'), status: 'in-queue', state: 'waiting-children' });
    assert.deepEqual(await pageJobIds(), before);
  });

  test('--prefix limits it to the docIds that start with it', async () => {
    const prefix = docId('done').slice(0, 6);
    const found = await reconcile({ docIdPrefix: prefix, dryRun: true });
    assert.deepEqual(
      found.map((outcome) => outcome.docId),
      Object.values(docIds).filter((id) => id.startsWith(prefix)),
    );
  });
});
