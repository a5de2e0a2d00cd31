// A 5,000-page PDF enqueued from a file: staged as it is, one page job per page added in chunks to a
// document job that waits for all of them, and the per-document limits refusing it with the reason
// before anything is staged or queued. (Memory is measured, not asserted: docs/operations.md.)
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Queue } from 'bullmq';

import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import { rejectedInputKey } from '../../src/jobs/storage-layout.js';
import { enqueueDocuments, PAGE_JOB_CHUNK } from '../../src/producer/enqueue.js';
import { documentJobId, pageJobId } from '../../src/queue/job-ids.js';
import { DOCUMENTS, pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage } from '../../src/storage/storage.js';
import { makePdf } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';

const PAGES = 5_000;
const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 6 };

describe('a 5,000-page PDF', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let work: string;
  let pdfPath: string;
  let storage: Storage;
  let documents: Queue;
  let pages: Queue;

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-huge-'));
    pdfPath = path.join(work, 'ledger.pdf');
    await writeFile(pdfPath, await makePdf(Array.from({ length: PAGES }, (): [number, number] => [216, 216]), 1));
    storage = openStorage(`file://${path.join(work, 'storage')}`);
    documents = new Queue(DOCUMENTS.name, { connection: redisOptions(redis.url, 'client'), prefix: DOCUMENTS.prefix });
    pages = new Queue(pageQueue('v1').name, { connection: redisOptions(redis.url, 'client'), prefix: DOCUMENTS.prefix });
  });

  after(async () => {
    await Promise.all([documents?.close(), pages?.close()]);
    await rm(work, { recursive: true, force: true });
  });

  /** Page jobs by the states a queued job can be in before a worker takes it. */
  async function queuedPageJobs(): Promise<{ waiting: number; prioritized: number; delayed: number }> {
    const { waiting, prioritized, delayed } = await pages.getJobCounts('waiting', 'prioritized', 'delayed');
    return { waiting, prioritized, delayed };
  }

  const enqueue = (limits = {}) => enqueueDocuments([pdfPath], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client'), limits });

  test('is staged as it is and queued as one job per page, all of them held by the document job', async () => {
    await redis.flush();
    assert.ok(PAGES > 2 * PAGE_JOB_CHUNK, 'the document is added in several chunks');
    const summary = await enqueue({ maxPages: PAGES, maxBytes: (await stat(pdfPath)).size });
    assert.deepEqual({ documents: summary.documents, pages: summary.pages, rejected: summary.rejected }, { documents: 1, pages: PAGES, rejected: [] });
    const [{ docId, keys }] = summary.queued;

    const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
    assert.equal(sha256(await storage.get(keys.source)), sha256(await readFile(pdfPath)));

    assert.deepEqual(await queuedPageJobs(), { waiting: 0, prioritized: PAGES, delayed: 0 }, 'every page job is ready, the holding one released');
    for (const page of [1, 2, PAGE_JOB_CHUNK + 1, PAGES]) assert.ok(await pages.getJob(pageJobId(docId, page, page)), `page ${page} is queued`);

    const parent = await documents.getJob(documentJobId(docId));
    assert.equal(await parent?.getState(), 'waiting-children');
    assert.deepEqual(await parent?.getDependenciesCount({ unprocessed: true }), { unprocessed: PAGES });
  });

  test('enqueued again, it adds nothing', async () => {
    const before = await pages.getJobCounts();
    const again = await enqueue();
    assert.deepEqual({ documents: again.documents, alreadyQueued: again.alreadyQueued }, { documents: 0, alreadyQueued: 1 });
    assert.deepEqual(await pages.getJobCounts(), before);
  });

  test('over the page limit, it is refused with the reason, and nothing is staged or queued', async () => {
    await redis.flush();
    await rm(path.join(work, 'storage'), { recursive: true, force: true });
    const summary = await enqueue({ maxPages: PAGES - 1 });
    assert.equal(summary.documents, 0);
    assert.deepEqual(
      summary.rejected.map(({ reason }) => reason),
      [`too many pages: ${PAGES}, over the limit of ${PAGES - 1} per document (--max-document-pages)`],
    );
    const recorded = JSON.parse((await storage.get(rejectedInputKey(pdfPath))).toString()) as { reason: string };
    assert.equal(recorded.reason, summary.rejected[0].reason);
    assert.deepEqual(await queuedPageJobs(), { waiting: 0, prioritized: 0, delayed: 0 });
    const staged = [];
    for await (const object of storage.list('staging/', { recursive: true })) staged.push(object.key);
    assert.deepEqual(staged, []);
  });

  test('over the size limit, it is refused with the reason before it is read', async () => {
    const size = (await stat(pdfPath)).size;
    const summary = await enqueue({ maxBytes: size - 1 });
    assert.equal(summary.documents, 0);
    assert.match(summary.rejected[0].reason, /^too large: \d+\.\d MB, over the limit of \d+\.\d MB per document \(--max-document-mb\)$/);
    assert.deepEqual(await queuedPageJobs(), { waiting: 0, prioritized: 0, delayed: 0 });
  });
});
