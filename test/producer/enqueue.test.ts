// enqueueDocuments against a real Redis (no workers): one flow per document with ids derived from
// the docId, nothing added twice, rejected inputs reported with their reason.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';

import { FlowProducer, Queue, type Job } from 'bullmq';

import type { DocumentJobData, OcrJobOptions, PageJobData } from '../../src/jobs/job-types.js';
import { documentId } from '../../src/producer/doc-id.js';
import { documentFlow, enqueueDocuments, type EnqueueOptions } from '../../src/producer/enqueue.js';
import { planDocument, type PlannedDocument } from '../../src/producer/plan-document.js';
import { DEFAULT_PRIORITY } from '../../src/queue/job-options.js';
import { DOCUMENTS, pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage } from '../../src/storage/storage.js';
import { LETTER, makeCorruptPdf, makePdf, makePng } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';

const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 8 };

describe('enqueueDocuments', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let root: string;
  let inputDir: string;
  let storage: Storage;
  let pdfId: string;
  let pngId: string;
  let documents: Queue<DocumentJobData>;
  let pages: Queue<PageJobData>;

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-queue-enqueue-'));
    inputDir = path.join(root, 'in');
    await mkdir(inputDir);
    const pdf = await makePdf([LETTER, LETTER], 2);
    const png = await makePng();
    await writeFile(path.join(inputDir, 'two-pages.pdf'), pdf);
    await writeFile(path.join(inputDir, 'picture.png'), png);
    await writeFile(path.join(inputDir, 'broken.pdf'), makeCorruptPdf());
    pdfId = documentId(pdf, OCR);
    pngId = documentId(png, OCR);
    const connection = redisOptions(redis.url, 'client');
    documents = new Queue(DOCUMENTS.name, { connection, prefix: DOCUMENTS.prefix });
    pages = new Queue(pageQueue('v1').name, { connection, prefix: pageQueue('v1').prefix });
  });
  beforeEach(async () => {
    await redis.flush();
    storage = openStorage(await mkdtemp(path.join(root, 'storage-')));
  });
  after(async () => {
    await Promise.all([documents.close(), pages.close()]);
    await rm(root, { recursive: true, force: true });
  });

  const enqueue = (extra: Partial<EnqueueOptions> = {}) =>
    enqueueDocuments([inputDir], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client'), ...extra });
  const ids = (jobs: Job[]) => jobs.map((job) => job.id).sort();

  test('a folder with a 2-page PDF and a PNG gives two flows with job ids derived from the docIds', async () => {
    const summary = await enqueue();
    assert.deepEqual({ documents: summary.documents, pages: summary.pages, skippedDone: summary.skippedDone, alreadyQueued: summary.alreadyQueued }, {
      documents: 2,
      pages: 3,
      skippedDone: 0,
      alreadyQueued: 0,
    });
    assert.deepEqual(ids(await documents.getJobs(['waiting-children'])), [pdfId, pngId].sort());
    assert.deepEqual(ids(await pages.getJobs(['prioritized'])), [`${pdfId}.p1-1`, `${pdfId}.p2-2`, `${pngId}.p1-1`].sort());
  });

  test('each page job is a child of its document job, named for its page, carrying keys and options', async () => {
    await enqueue();
    const page = await pages.getJob(`${pdfId}.p2-2`);
    assert.ok(page);
    assert.equal(page.name, `page ${pdfId}:2`);
    assert.equal(page.parentKey, `${DOCUMENTS.prefix}:${DOCUMENTS.name}:${pdfId}`);
    assert.deepEqual({ firstPage: page.data.firstPage, lastPage: page.data.lastPage, keys: page.data.keys, options: page.data.options }, {
      firstPage: 2,
      lastPage: 2,
      keys: { source: `staging/${pdfId}/source.pdf`, results: `results/${pdfId}/` },
      options: OCR,
    });
    const document = await documents.getJob(pdfId);
    assert.equal(document?.name, `document ${pdfId}`);
    assert.equal(document?.data.pageCount, 2);
    assert.deepEqual(await document?.getDependenciesCount(), { processed: 0, unprocessed: 2, ignored: 0, failed: 0 });
  });

  test('V3 parse-multi gives one child per page group, named for its pages, on the V3 page queue only', async () => {
    const multi: OcrJobOptions = { variant: 'v3', task: 'parse-multi', mode: 'base', dpi: 36, maxNewTokens: 8 };
    const summary = await enqueueDocuments([path.join(inputDir, 'two-pages.pdf')], { ocr: multi, storage, connection: redisOptions(redis.url, 'client') });
    const { docId } = summary.queued[0];
    const v3Pages = new Queue<PageJobData>(pageQueue('v3').name, { connection: redisOptions(redis.url, 'client'), prefix: pageQueue('v3').prefix });
    try {
      const jobs = await v3Pages.getJobs(['prioritized']);
      assert.deepEqual(jobs.map(({ id, name }) => ({ id, name })), [{ id: `${docId}.p1-2`, name: `pages ${docId}:1-2` }]);
      assert.equal(await pages.count(), 0);
    } finally {
      await v3Pages.close();
    }
  });

  test('page jobs are tried 5 times, 2 s apart and doubling, and let their document go on when they fail', async () => {
    await enqueue();
    const { opts } = (await pages.getJob(`${pngId}.p1-1`))!;
    assert.deepEqual(
      { attempts: opts.attempts, backoff: opts.backoff, ignoreDependencyOnFailure: opts.ignoreDependencyOnFailure, priority: opts.priority },
      { attempts: 5, backoff: { type: 'exponential', delay: 2000 }, ignoreDependencyOnFailure: true, priority: DEFAULT_PRIORITY },
    );
  });

  test('--priority and --attempts reach every job of the flow', async () => {
    await enqueue({ priority: 7, attempts: 5 });
    assert.equal((await documents.getJob(pdfId))?.opts.priority, 7);
    assert.deepEqual(
      (await pages.getJobs(['prioritized'])).map((job) => [job.opts.priority, job.opts.attempts]),
      [[7, 5], [7, 5], [7, 5]],
    );
  });

  test('the sources are staged once under staging/<docId>/', async () => {
    await enqueue();
    assert.equal(await storage.exists(`staging/${pdfId}/source.pdf`), true);
    assert.equal(await storage.exists(`staging/${pngId}/source.png`), true);
  });

  test('enqueueing the same folder again adds nothing and reports the documents as already queued', async () => {
    await enqueue();
    const before = { documents: await documents.getJobCounts(), pages: await pages.getJobCounts() };
    const again = await enqueue();
    assert.deepEqual({ documents: again.documents, pages: again.pages, alreadyQueued: again.alreadyQueued }, { documents: 0, pages: 0, alreadyQueued: 2 });
    assert.deepEqual({ documents: await documents.getJobCounts(), pages: await pages.getJobCounts() }, before);
  });

  test('adding the same flow twice through BullMQ keeps one set of jobs: it ignores ids it already holds', async () => {
    const plan = await planDocument({ uri: 'memory:two-pages.pdf', size: 0, bytes: () => readFile(path.join(inputDir, 'two-pages.pdf')) }, OCR, { storage });
    assert.equal(plan.status, 'planned');
    const flows = new FlowProducer({ connection: redisOptions(redis.url, 'client'), prefix: DOCUMENTS.prefix });
    try {
      const first = await flows.add(documentFlow(plan as PlannedDocument));
      const second = await flows.add(documentFlow(plan as PlannedDocument, { priority: 1 }));
      assert.deepEqual([second.job.id, ...(second.children ?? []).map(({ job }) => job.id)], [first.job.id, ...(first.children ?? []).map(({ job }) => job.id)]);
    } finally {
      await flows.close();
    }
    assert.deepEqual(ids(await documents.getJobs(['waiting-children'])), [pdfId]);
    assert.deepEqual(ids(await pages.getJobs(['prioritized'])), [`${pdfId}.p1-1`, `${pdfId}.p2-2`]);
    assert.equal((await documents.getJob(pdfId))?.opts.priority, DEFAULT_PRIORITY, 'the first flow\'s options stay');
  });

  test('two producers enqueueing the same folder at once leave one set of jobs', async () => {
    await Promise.all([enqueue(), enqueue()]);
    assert.deepEqual(ids(await documents.getJobs(['waiting-children'])), [pdfId, pngId].sort());
    assert.equal(await pages.getJobCountByTypes('prioritized'), 3);
  });

  test('the corrupt PDF is rejected with the reason, and nothing is queued or staged for it', async () => {
    const summary = await enqueue();
    assert.equal(summary.rejected.length, 1);
    assert.equal(summary.rejected[0].uri, path.join(inputDir, 'broken.pdf'));
    assert.match(summary.rejected[0].reason, /^corrupt PDF: /);
    assert.equal((await documents.getJobCountByTypes('waiting-children')), 2);
  });

  test('a missing input is rejected with the reason it cannot be read', async () => {
    const missing = path.join(root, 'no-such-file.pdf');
    const summary = await enqueueDocuments([missing], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client') });
    assert.deepEqual(summary.rejected.map(({ uri }) => uri), [missing]);
    assert.match(summary.rejected[0].reason, /cannot read the input/);
  });

  test('a document whose _DONE marker exists is skipped without staging or queueing', async () => {
    await storage.put(`results/${pngId}/_DONE`, Buffer.from('{}'));
    const summary = await enqueue();
    assert.equal(summary.skippedDone, 1);
    assert.deepEqual(
      summary.queued.map(({ docId, state }) => ({ docId, state })).sort((a, b) => a.docId.localeCompare(b.docId)),
      [
        { docId: pdfId, state: 'enqueued' },
        { docId: pngId, state: 'already-done' },
      ].sort((a, b) => a.docId.localeCompare(b.docId)),
    );
    assert.equal(await storage.exists(`staging/${pngId}/source.png`), false);
    assert.equal(await documents.getJob(pngId), undefined);
  });
});
