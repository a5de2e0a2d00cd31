// Document assembly from page statuses and page JSONs on file:// storage: document.md, document.json
// (flagged pages included), then the _DONE marker with the document's options.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import type { DocumentJobData, StageTimings, StoredPage } from '../../src/jobs/job-types.js';
import { needsReview, type PageFlag } from '../../src/jobs/page-flags.js';
import { parseDoneMarkerJson, type DocumentResultJson, type PageResultJson } from '../../src/jobs/result-json.js';
import { documentKeys, pageAttemptKeys, pageAttemptsFolder, pageResultKey } from '../../src/jobs/storage-layout.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage } from '../../src/storage/storage.js';
import { StorageError } from '../../src/storage/storage-error.js';
import { assembleDocument, failedPageNote, type PageStatus } from '../../src/worker/document-assembler.js';
import { FlakyStorage } from '../support/flaky-storage.js';

let root: string;
let storage: Storage;
const putEvents: string[] = [];

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-worker-assembler-'));
  storage = recordingPuts(openStorage(root), putEvents);
});
after(() => rm(root, { recursive: true, force: true }));

/** Pages 1 and 3 done (every stage 10 and 30 ms), page 2 failed. */
async function assembleThreePages(name: string): Promise<DocumentResultJson> {
  await storePage(name, 1, 'First page.', 10);
  await storePage(name, 3, 'Third page.', 30);
  return assembleDocument(documentJob(name, 3), [
    { page: 3, status: 'done', key: pageKey(name, 3) },
    { page: 1, status: 'done', key: pageKey(name, 1) },
    { page: 2, status: 'failed', reason: 'the PDF is damaged' },
  ], storage);
}

test("document.md joins the pages' markdown in page order, a failed page replaced by a note", async () => {
  await assembleThreePages('md');
  assert.equal(
    (await storage.get(`results/${idOf('md')}/document.md`)).toString(),
    'First page.\n\n<--- Page Split --->\n\n<!-- page 2 failed: the PDF is damaged -->\n\n<--- Page Split --->\n\nThird page.\n',
  );
});

test('document.json lists done pages, failed pages with reasons, and stage statistics over done pages', async () => {
  const returned = await assembleThreePages('json');
  const stored = JSON.parse((await storage.get(`results/${idOf('json')}/document.json`)).toString()) as DocumentResultJson;
  assert.deepEqual(stored, returned);
  assert.deepEqual(stored.pages, [
    { page: 1, status: 'done', key: `results/${idOf('json')}/pages/0001.json` },
    { page: 3, status: 'done', key: `results/${idOf('json')}/pages/0003.json` },
  ]);
  assert.deepEqual(stored.failedPages, [{ page: 2, reason: 'the PDF is damaged' }]);
  assert.deepEqual(stored.timings_ms.decode, { total: 40, p50: 10, p90: 30, p99: 30, max: 30 });
  assert.deepEqual(stored.source, { uri: 's3://in/json.pdf', type: 'pdf', pages: 3 });
  assert.equal(stored.model?.checkpoint, 'sha256:tiny');
});

test("document.json's confidence is over the done pages that carry one; pages of earlier versions without one are left out", async () => {
  await storePage('confident', 1, 'One.', 5, { confidence: { mean: 0.95, min: 0.5 } });
  await storePage('confident', 2, 'Two.', 5); // stored by an earlier version
  await storePage('confident', 3, 'Three.', 5, { confidence: { mean: 0.42, min: 0.01 } });
  const statuses: PageStatus[] = [1, 2, 3].map((page) => ({ page, status: 'done', key: pageKey('confident', page) }));
  const document = await assembleDocument(documentJob('confident', 4), [...statuses, { page: 4, status: 'failed', reason: 'unreadable' }], storage);
  assert.ok(Math.abs(document.confidence!.mean - (0.95 + 0.42) / 2) < 1e-12, `mean ${document.confidence!.mean}`);
  assert.deepEqual(document.confidence!.histogram, [0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
  assert.deepEqual(document.confidence!.leastConfident, [
    { page: 3, mean: 0.42, min: 0.01 },
    { page: 1, mean: 0.95, min: 0.5 },
  ]);
  const stored = JSON.parse((await storage.get(`results/${idOf('confident')}/document.json`)).toString()) as DocumentResultJson;
  assert.deepEqual(stored.confidence, document.confidence);
  // No page with a confidence: null rather than a made-up figure.
  assert.equal((await assembleThreePages('unconfident')).confidence, null);
});

test('the marker (here _FAILED_PAGES: page 2 failed) is written only after document.md and document.json are stored', async () => {
  await assembleThreePages('order');
  const events = putEvents.filter((event) => event.includes(`results/${idOf('order')}/`) && !event.includes('/pages/'));
  const markerStarted = events.indexOf(`start results/${idOf('order')}/_FAILED_PAGES`);
  assert.ok(markerStarted > events.indexOf(`end results/${idOf('order')}/document.md`), events.join('\n'));
  assert.ok(markerStarted > events.indexOf(`end results/${idOf('order')}/document.json`), events.join('\n'));
  assert.equal(events.at(-1), `end results/${idOf('order')}/_FAILED_PAGES`);
});

test('_DONE only when every page succeeded; otherwise _FAILED_PAGES with the reasons and the options, and no _DONE', async () => {
  await assembleThreePages('partial');
  assert.equal(await storage.exists(`results/${idOf('partial')}/_DONE`), false);
  const marker = JSON.parse((await storage.get(`results/${idOf('partial')}/_FAILED_PAGES`)).toString());
  assert.deepEqual(
    { failedPages: marker.failedPages, options: marker.options, type: marker.type },
    { failedPages: [{ page: 2, reason: 'the PDF is damaged' }], options: documentJob('partial', 3).options, type: 'pdf' },
  );
  await storePage('whole', 1, 'Only page.', 5);
  await assembleDocument(documentJob('whole', 1), [{ page: 1, status: 'done', key: pageKey('whole', 1) }], storage);
  assert.deepEqual([await storage.exists(`results/${idOf('whole')}/_DONE`), await storage.exists(`results/${idOf('whole')}/_FAILED_PAGES`)], [true, false]);
  const done = parseDoneMarkerJson((await storage.get(`results/${idOf('whole')}/_DONE`)).toString(), '_DONE');
  assert.deepEqual({ docId: done.docId, options: done.options }, { docId: idOf('whole'), options: documentJob('whole', 1).options });
});

test('document.json lists the done pages that carry flags; pages without flags, and results of earlier versions, are not listed', async () => {
  await storePage('flagged', 1, 'Read before pages had flags.', 5);
  await storePage('flagged', 2, 'Clean.', 5, { flags: [] });
  await storePage('flagged', 3, 'Cut off, looping.', 5, { flags: ['max_tokens', 'repetition'] });
  await storePage('flagged', 4, ' ', 5, { flags: ['empty'] });
  const document = await assembleDocument(
    documentJob('flagged', 4),
    [1, 2, 3, 4].map((page): PageStatus => ({ page, status: 'done', key: pageKey('flagged', page) })),
    storage,
  );
  assert.deepEqual(document.flagged, [
    { page: 3, flags: ['max_tokens', 'repetition'] },
    { page: 4, flags: ['empty'] },
  ]);
  assert.equal(document.pages.length, 4, 'a flagged page is done');
  assert.equal(await storage.exists(`results/${idOf('flagged')}/_DONE`), true);
});

test('a page without a status whose result is stored (an earlier run read it) counts as done', async () => {
  await storePage('resumed', 1, 'Read by the interrupted run.', 5);
  await storePage('resumed', 2, 'Read now.', 5);
  const document = await assembleDocument(documentJob('resumed', 2), [{ page: 2, status: 'done', key: pageKey('resumed', 2) }], storage);
  assert.deepEqual({ pages: document.pages.map(({ page }) => page), failed: document.failedPages }, { pages: [1, 2], failed: [] });
});

test('a page without any reported status is listed as failed', async () => {
  await storePage('silent', 1, 'Only page read.', 5);
  const document = await assembleDocument(documentJob('silent', 2), [{ page: 1, status: 'done', key: pageKey('silent', 1) }], storage);
  assert.deepEqual(document.failedPages, [{ page: 2, reason: 'no page result was reported' }]);
});

test('a failed page that was not retried (another page of it was) keeps the reason its earlier assembly gave', async () => {
  await storePage('kept-reason', 1, 'First page.', 5);
  const first: PageStatus[] = [
    { page: 1, status: 'done', key: pageKey('kept-reason', 1) },
    { page: 2, status: 'failed', reason: 'the PDF is damaged' },
    { page: 3, status: 'failed', reason: 'timed out after 600 s' },
  ];
  assert.equal((await assembleDocument(documentJob('kept-reason', 3), first, storage)).failedPages.length, 2);
  // Page 3 retried alone: page 2 is reported by no job now, and keeps its reason.
  await storePage('kept-reason', 3, 'Third page, retried alone.', 5);
  const again = await assembleDocument(documentJob('kept-reason', 3), [{ page: 3, status: 'done', key: pageKey('kept-reason', 3) }], storage);
  assert.deepEqual(again.failedPages, [{ page: 2, reason: 'the PDF is damaged' }]);
});

test('a page reported done whose JSON is missing is listed as failed', async () => {
  const document = await assembleDocument(documentJob('lost', 1), [{ page: 1, status: 'done', key: pageKey('lost', 1) }], storage);
  assert.deepEqual(document.failedPages, [{ page: 1, reason: `the page was reported done but results/${idOf('lost')}/pages/0001.json is missing` }]);
  assert.deepEqual(document.timings_ms.total, { total: 0, p50: 0, p90: 0, p99: 0, max: 0 });
});

test('a page reported failed and then done (a retry) counts as done', async () => {
  await storePage('retried', 1, 'Read on the second try.', 5);
  const statuses: PageStatus[] = [
    { page: 1, status: 'failed', reason: 'storage unreachable' },
    { page: 1, status: 'done', key: pageKey('retried', 1) },
  ];
  const document = await assembleDocument(documentJob('retried', 1), statuses, storage);
  assert.deepEqual({ pages: document.pages.length, failed: document.failedPages }, { pages: 1, failed: [] });
});

test("a page reported done is committed from its try's keys before it is read; tries that never became results are removed", async () => {
  const docId = idOf('committed');
  const [done, orphan] = [pageAttemptKeys(docId, 1, 'a1'), pageAttemptKeys(docId, 2, 'b2')];
  await storePage('committed', 1, 'Read by the try that completed.', 5);
  const json = await storage.get(pageKey('committed', 1));
  await Promise.all([storage.put(done.key, json), storage.put(done.markdownKey, Buffer.from('Read by the try that completed.'))]);
  await storage.delete(pageKey('committed', 1));
  // A try of page 2 whose worker lost the job's lock: the job failed, so it must not become the result.
  await Promise.all([storage.put(orphan.key, json), storage.put(orphan.markdownKey, Buffer.from('Too late.'))]);
  const stored: StoredPage = { page: 1, key: pageKey('committed', 1), markdownKey: pageResultKey(docId, 1, 'md'), timings_ms: JSON.parse(json.toString()).timings_ms as StageTimings, attempt: done };
  const document = await assembleDocument(
    documentJob('committed', 2),
    [
      { page: 1, status: 'done', key: stored.key, stored },
      { page: 2, status: 'failed', reason: 'gave up' },
    ],
    storage,
  );
  assert.deepEqual({ done: document.pages.map((page) => page.page), failed: document.failedPages }, { done: [1], failed: [{ page: 2, reason: 'gave up' }] });
  assert.deepEqual(await storage.get(pageKey('committed', 1)), json);
  assert.equal((await storage.get(pageResultKey(docId, 1, 'md'))).toString(), 'Read by the try that completed.');
  assert.equal(await storage.exists(pageKey('committed', 2)), false);
  const left = [];
  for await (const { key } of storage.list(pageAttemptsFolder(docId))) left.push(key);
  assert.deepEqual(left, []);
});

test('a page reported failed whose JSON is in storage counts as done', async () => {
  // Committed by an earlier run of the document (read before Redis lost its jobs, say).
  await storePage('stored-late', 1, 'Stored by an earlier run.', 5);
  const document = await assembleDocument(documentJob('stored-late', 1), [{ page: 1, status: 'failed', reason: 'gave up' }], storage);
  assert.deepEqual(document.pages, [{ page: 1, status: 'done', key: pageKey('stored-late', 1) }]);
  assert.deepEqual(document.failedPages, []);
});

test('storage that cannot be read while assembling fails the assembly, even for a page reported failed: its result may be there', async () => {
  await storePage('unreadable', 1, 'Stored, then the storage stopped answering.', 5);
  const flaky = new FlakyStorage(root);
  flaky.unreadable.add(pageKey('unreadable', 1));
  const statuses: PageStatus[] = [{ page: 1, status: 'failed', reason: 'gave up' }];
  await assert.rejects(assembleDocument(documentJob('unreadable', 1), statuses, flaky), (error: unknown) => error instanceof StorageError && error.code === 'transient');
  flaky.unreadable.clear();
  const document = await assembleDocument(documentJob('unreadable', 1), statuses, flaky);
  assert.deepEqual({ done: document.pages.map((page) => page.page), failed: document.failedPages }, { done: [1], failed: [] });
});

test("a document job's assembly run again after its marker writes nothing again, and finishes what follows the marker", async () => {
  await storePage('again', 1, 'Read once.', 5);
  const statuses: PageStatus[] = [{ page: 1, status: 'done', key: pageKey('again', 1) }];
  const first = await assembleDocument(documentJob('again', 1), statuses, storage, 'job-a@1000');
  const marker = parseDoneMarkerJson((await storage.get(`results/${idOf('again')}/_DONE`)).toString(), '_DONE');
  assert.equal(marker.assembly, 'job-a@1000');

  // Its worker was killed before the queue recorded the job's completion; meanwhile another killed worker left a try.
  const left = pageAttemptKeys(idOf('again'), 1, 'a1');
  await storage.put(left.key, Buffer.from('{}'));
  const writes = () => putEvents.filter((event) => event.startsWith(`end results/${idOf('again')}/`) && !event.includes('/attempts/')).length;
  const before = writes();
  const again = await assembleDocument(documentJob('again', 1), statuses, storage, 'job-a@1000');
  assert.deepEqual(again, first);
  assert.equal(writes(), before, 'nothing written again');
  assert.equal(await storage.exists(left.key), false, 'the steps after the marker are done');

  // The same document queued again (another job, or the same id at another time) is assembled again.
  const requeued = await assembleDocument(documentJob('again', 1), statuses, storage, 'job-a@2000');
  assert.ok(writes() > before);
  assert.notEqual(requeued.completedAt, first.completedAt);
  assert.equal(parseDoneMarkerJson((await storage.get(`results/${idOf('again')}/_DONE`)).toString(), '_DONE').assembly, 'job-a@2000');
});

test("two runs of one document job at once (a lost lock) write its marker once, and both finish", async () => {
  await storePage('twice', 1, 'Read once.', 5);
  const statuses: PageStatus[] = [{ page: 1, status: 'done', key: pageKey('twice', 1) }];
  const doneKey = `results/${idOf('twice')}/_DONE`;
  const gate = markerGate(storage, doneKey, 2);
  const runs = await Promise.all([1, 2].map(() => assembleDocument(documentJob('twice', 1), statuses, gate, 'job-t@1000')));
  assert.deepEqual(runs.map((run) => run.pages.length), [1, 1]);
  assert.equal(putEvents.filter((event) => event === `end ${doneKey}`).length, 1, 'one marker write');
  assert.equal(parseDoneMarkerJson((await storage.get(doneKey)).toString(), '_DONE').assembly, 'job-t@1000');
});

test('of two different document jobs assembling one document at once, one writes its marker and the other fails to be tried again', async () => {
  await storePage('rivals', 1, 'Read once.', 5);
  const statuses: PageStatus[] = [{ page: 1, status: 'done', key: pageKey('rivals', 1) }];
  const doneKey = `results/${idOf('rivals')}/_DONE`;
  const gate = markerGate(storage, doneKey, 2);
  const runs = await Promise.allSettled(['job-r@1000', 'job-r@2000'].map((assembly) => assembleDocument(documentJob('rivals', 1), statuses, gate, assembly)));
  const failed = runs.flatMap((run) => (run.status === 'rejected' ? [run.reason as unknown] : []));
  assert.equal(failed.length, 1);
  assert.ok(failed[0] instanceof StorageError && failed[0].code === 'conflict', String(failed[0]));
  assert.match((failed[0] as Error).message, /another assembly wrote .*_DONE while this one ran/);
  assert.equal(putEvents.filter((event) => event === `end ${doneKey}`).length, 1);

  // Its next try reads the winner's marker and replaces it.
  const loser = runs[0].status === 'rejected' ? 'job-r@1000' : 'job-r@2000';
  await assembleDocument(documentJob('rivals', 1), statuses, storage, loser);
  assert.equal(parseDoneMarkerJson((await storage.get(doneKey)).toString(), '_DONE').assembly, loser);
});

test('a failure note stays one HTML comment whatever the reason holds', () => {
  assert.equal(failedPageNote(7, 'bad xref -->\nat offset 12'), '<!-- page 7 failed: bad xref - -> at offset 12 -->');
});

/** A docId for a test's name, so that every test writes its own results folder. */
function idOf(name: string): string {
  return createHash('sha256').update(name).digest('hex').slice(0, 32);
}

function documentJob(name: string, pageCount: number): DocumentJobData {
  const docId = idOf(name);
  return {
    docId,
    sourceUri: `s3://in/${name}.pdf`,
    storage: storage.url,
    type: 'pdf',
    pageCount,
    keys: documentKeys(docId, 'pdf'),
    options: { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 144 },
    enqueuedAt: 0,
  };
}

function pageKey(name: string, page: number): string {
  return pageResultKey(idOf(name), page, 'json');
}

/**
 * A page JSON whose stages all took `stageMs`, with `confidence` and `flags` when given; without flags,
 * one written by an earlier version (no flags, and the token budget's finish still named 'length').
 */
async function storePage(
  name: string,
  page: number,
  markdown: string,
  stageMs: number,
  { confidence, flags }: { confidence?: PageResultJson['confidence']; flags?: PageFlag[] } = {},
): Promise<void> {
  const timings = Object.fromEntries(
    ['queued', 'fetch', 'render', 'preprocess', 'encode', 'prefill', 'decode', 'postprocess', 'store', 'total'].map((stage) => [stage, stageMs]),
  ) as StageTimings;
  const json: PageResultJson = {
    docId: idOf(name),
    source: { uri: `s3://in/${name}.pdf`, page },
    render: { width: 612, height: 792, dpi: 72, pdfPage: { width: 612, height: 792 } },
    model: { variant: 'v1', task: 'markdown', mode: 'tiny', checkpoint: 'sha256:tiny', synthetic: true },
    markdown,
    blocks: [],
    ...(confidence === undefined ? {} : { confidence }),
    tokens: { prompt: 83, image: 73, generated: 8 },
    finish: 'max_tokens',
    ...(flags === undefined ? {} : { flags, needs_review: needsReview(flags) }),
    timings_ms: timings,
    worker: { host: 'test-host', backend: 'cpu-test', attempt: 1 },
    scriptorium: { version: '0.1.0', commit: 'unknown' },
  };
  await storage.put(pageKey(name, page), Buffer.from(JSON.stringify(flags === undefined ? { ...json, finish: 'length' } : json)));
}

/** The storage, with conditional writes of `key` held until `runs` of them have come: each has read the marker before any writes it. */
function markerGate(inner: Storage, key: string, runs: number): Storage {
  let arrived = 0;
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return Object.assign(Object.create(inner) as Storage, {
    putIfUnchanged: async (...args: Parameters<Storage['putIfUnchanged']>) => {
      if (args[0] === key && ++arrived === runs) open();
      if (args[0] === key) await opened;
      return inner.putIfUnchanged(...args);
    },
  });
}

/** The storage, recording when each put (conditional or not) starts and ends. */
function recordingPuts(inner: Storage, events: string[]): Storage {
  return {
    url: inner.url,
    put: async (...args) => {
      events.push(`start ${args[0]}`);
      await inner.put(...args);
      events.push(`end ${args[0]}`);
    },
    putIfUnchanged: async (...args) => {
      events.push(`start ${args[0]}`);
      await inner.putIfUnchanged(...args);
      events.push(`end ${args[0]}`);
    },
    get: (key) => inner.get(key),
    getVersioned: (key) => inner.getVersioned(key),
    getStream: (key) => inner.getStream(key),
    exists: (key) => inner.exists(key),
    delete: (key) => inner.delete(key),
    list: (...args) => inner.list(...args),
    stat: (key) => inner.stat(key),
  };
}

test('a page whose stored JSON is damaged is listed as failed with the reason; the other pages are assembled', async () => {
  await storePage('damaged', 1, 'Readable page.', 5);
  await storage.put(pageKey('damaged', 2), Buffer.from('{"docId": "trunc'));
  const document = await assembleDocument(documentJob('damaged', 2), [
    { page: 1, status: 'done', key: pageKey('damaged', 1) },
    { page: 2, status: 'done', key: pageKey('damaged', 2) },
  ], storage);
  assert.deepEqual(document.pages.map(({ page }) => page), [1]);
  assert.equal(document.failedPages.length, 1);
  assert.match(document.failedPages[0].reason, new RegExp(`^results/${idOf('damaged')}/pages/0002\\.json is not JSON: `));
});

test('a document of which no page was read names no model: no checkpoint is guessed', async () => {
  const document = await assembleDocument(documentJob('unread', 1), [{ page: 1, status: 'failed', reason: 'the PDF is damaged' }], storage);
  assert.equal(document.model, null);
});

test("a damaged document's document.json says what is wrong; its lost pages are failed pages", async () => {
  await storePage('damaged-source', 1, 'The page that was left.', 5);
  const damage = 'damaged PDF: it is truncated or its cross-reference table is broken; rebuilt from its objects, 1 of 2 pages can be read';
  const document = await assembleDocument({ ...documentJob('damaged-source', 2), damage }, [
    { page: 1, status: 'done', key: pageKey('damaged-source', 1) },
    { page: 2, status: 'failed', reason: 'page index 1 could not be loaded by PDFium' },
  ], storage);
  const stored = JSON.parse((await storage.get(`results/${idOf('damaged-source')}/document.json`)).toString()) as DocumentResultJson;
  assert.equal(stored.damage, damage);
  assert.deepEqual(document.failedPages.map(({ page }) => page), [2]);
});
