// The last step of a document, once all its page jobs have settled: results/<docId>/document.md (the
// pages' markdown in order), document.json (pages, failed pages with reasons, flagged pages, stage
// statistics, confidence), then a marker: _DONE when every page succeeded, else _FAILED_PAGES with the
// reasons (so that a re-run or `scriptorium retry` reads those pages again). Both markers hold the
// options the document was read with, which `scriptorium retry` starts from. The marker goes last, so
// a crash part-way never leaves a marker without the files, and assembling again after a crash
// rewrites the same files.
// A page with no status from the queue (an earlier, interrupted run stored it, so it was not queued
// again) is read from its stored result; one without a stored result that failed before (a retry of
// other pages) keeps the reason the earlier _FAILED_PAGES marker gave.
// Done pages are committed first (page-commit.ts: their worker may have died before it did), and
// once the markers are written, the tries that never became results are removed.
// A document job's assembly is named in its marker, so that the same job run again (its worker was
// killed after the marker, or storage failed in the steps after it) writes nothing again: it only
// finishes those steps. The marker is written only if it is still the one this assembly read
// (putIfUnchanged), so of two runs of one job at once (a worker that lost its lock while another took
// the job over), one writes it and the other finds its job named there and only finishes. The
// document is assembled once per job.
import { documentConfidence } from '../engine/confidence.js';
import { InvalidBoundaryDataError } from '../jobs/boundary-data.js';
import type { DocumentJobData, Stage, StoredPage } from '../jobs/job-types.js';
import type { PageFlag } from '../jobs/page-flags.js';
import { parseDocumentResultJson, parseDoneMarkerJson, parseFailedPagesMarkerJson, parsePageResultJson, type DocumentResultJson, type DoneMarkerJson, type FailedPagesMarkerJson, type PageResultJson } from '../jobs/result-json.js';
import { cancelledMarkerKey, documentResultKeys, pageResultKey } from '../jobs/storage-layout.js';
import { scriptoriumBuild } from '../output/build-info.js';
import type { Storage } from '../storage/storage.js';
import { StorageError } from '../storage/storage-error.js';
import { commitStoredPages, removeLeftAttempts } from './page-commit.js';
import { summarizeStageTimes, type StageSummary } from './stage-stats.js';

/** How one page of the document ended, as its page job reported it. */
export type PageStatus =
  | {
      page: number;
      status: 'done';
      /** results/<docId>/pages/<nnnn>.json */
      key: string;
      /** As the page job reported them. */
      flags?: PageFlag[];
      /** The job's pages as its try stored them, committed before the page is read (StoredPage.attempt). */
      stored?: StoredPage;
    }
  | { page: number; status: 'failed'; reason: string };

/** Between pages in document.md: the marker the official scripts and `scriptorium ocr` use. */
export const PAGE_SPLIT = '\n\n<--- Page Split --->\n\n';

/** Page results read at once from storage. */
const READ_CONCURRENCY = 16;

/** What document.json says of a page that has no status because its job was removed when the document was cancelled. */
export const CANCELLED_PAGE_REASON = 'the document was cancelled before this page was read';
const UNREPORTED_PAGE_REASON = 'no page result was reported';

/** A page without a status from the queue: its stored result, if any, else failed with `reason`. */
type UnreportedPage = { page: number; status: 'unreported'; key: string; reason: string };

type ReadPage = { page: number; status: 'done'; key: string; result: PageResultJson } | { page: number; status: 'failed'; reason: string };

/**
 * Writes the document's results from its pages' statuses and page JSONs. Every page 1…pageCount is
 * in the result: one with no status is done if its JSON is stored, else failed ("no page result was
 * reported", or cancelled), and a done page whose JSON is missing from storage or damaged is failed too. A page
 * reported failed whose JSON is in storage (committed by an earlier run of the document) is done.
 * Storage errors other than a missing page reject, so the job can be retried. `assembly` names this
 * assembly in the marker (a document job's id and creation time); when the marker already names it,
 * the document.json stored is returned and nothing is written again.
 */
export async function assembleDocument(job: DocumentJobData, statuses: readonly PageStatus[], storage: Storage, assembly?: string): Promise<DocumentResultJson> {
  const earlier = await earlierMarkers(job.docId, storage);
  const assembled = namesAssembly(earlier, assembly) ? await storedDocument(job.docId, storage) : undefined;
  if (assembled !== undefined) {
    await finishAssembly(job.docId, storage);
    return assembled;
  }
  const cancelled = await storage.exists(cancelledMarkerKey(job.docId));
  // The reasons of the pages an earlier assembly recorded as failed.
  const earlierReasons = new Map(cancelled ? [] : (earlier.failedPages.value?.failedPages ?? []).map(({ page, reason }) => [page, reason]));
  const missingReason = (page: number) => (cancelled ? CANCELLED_PAGE_REASON : (earlierReasons.get(page) ?? UNREPORTED_PAGE_REASON));
  const pages = await readPages(completeStatuses(job, statuses, missingReason), storage, job.docId);
  const done = pages.filter((page) => page.status === 'done');
  const summarize = (stage: Stage): StageSummary => summarizeStageTimes(done.map((page) => page.result.timings_ms[stage]));
  const completedAt = new Date().toISOString();
  const document: DocumentResultJson = {
    docId: job.docId,
    source: { uri: job.sourceUri, type: job.type, pages: job.pageCount },
    // With no page read, no model read the document: nothing to name.
    model: done[0]?.result.model ?? null,
    pages: done.map(({ page, key }) => ({ page, status: 'done', key })),
    failedPages: pages.flatMap((page) => (page.status === 'failed' ? [{ page: page.page, reason: page.reason }] : [])),
    flagged: done.flatMap(({ page, result }) => (result.flags !== undefined && result.flags.length > 0 ? [{ page, flags: result.flags }] : [])),
    ...(job.damage === undefined ? {} : { damage: job.damage }),
    timings_ms: {
      queued: summarize('queued'),
      fetch: summarize('fetch'),
      render: summarize('render'),
      preprocess: summarize('preprocess'),
      encode: summarize('encode'),
      prefill: summarize('prefill'),
      decode: summarize('decode'),
      postprocess: summarize('postprocess'),
      store: summarize('store'),
      total: summarize('total'),
    },
    // Pages stored by earlier versions carry no confidence and are left out of it.
    confidence: documentConfidence(done.flatMap(({ page, result }) => (result.confidence ? [{ page, confidence: result.confidence }] : []))),
    completedAt,
    scriptorium: scriptoriumBuild(),
  };
  const markdown = pages.map((page) => (page.status === 'done' ? page.result.markdown : failedPageNote(page.page, page.reason))).join(PAGE_SPLIT);

  const keys = documentResultKeys(job.docId);
  await Promise.all([
    storage.put(keys.markdown, Buffer.from(`${markdown}\n`), { contentType: 'text/markdown; charset=utf-8' }),
    storage.put(keys.json, Buffer.from(`${JSON.stringify(document, null, 2)}\n`), { contentType: 'application/json' }),
  ]);
  const named = assembly === undefined ? {} : { assembly };
  const allDone = document.failedPages.length === 0;
  const marker: DoneMarkerJson | FailedPagesMarkerJson = allDone
    ? { docId: job.docId, options: job.options, completedAt, ...named }
    : { docId: job.docId, sourceUri: job.sourceUri, type: job.type, options: job.options, failedPages: document.failedPages, completedAt, ...named };
  const markerKey = allDone ? keys.done : keys.failedPages;
  const expected = (allDone ? earlier.done : earlier.failedPages).version;
  try {
    await storage.putIfUnchanged(markerKey, Buffer.from(`${JSON.stringify(marker, null, 2)}\n`), expected, { contentType: 'application/json' });
  } catch (error) {
    if (!(error instanceof StorageError && error.code === 'conflict')) throw error;
    // Written since this assembly read it. By another run of this same job (two workers held it at
    // once after a lost lock): that run assembled the document, this one only finishes.
    if (namesAssembly(await earlierMarkers(job.docId, storage), assembly)) {
      await finishAssembly(job.docId, storage);
      return document;
    }
    throw new StorageError('conflict', `document ${job.docId}: another assembly wrote ${markerKey} while this one ran; it is assembled again on its next try`, {
      key: markerKey,
      cause: error,
    });
  }
  if (allDone) await storage.delete(keys.failedPages);
  await finishAssembly(job.docId, storage);
  return document;
}

/** What follows the marker: a cancellation is over once its document is assembled, and tries left behind are removed. */
async function finishAssembly(docId: string, storage: Storage): Promise<void> {
  await storage.delete(cancelledMarkerKey(docId));
  await removeLeftAttempts(docId, storage);
}

/** A stored JSON object: its version (null: there is none) and, unless damaged, what it says. */
interface StoredJson<T> {
  version: string | null;
  value?: T;
}

/** The markers an earlier assembly of the document left. */
interface EarlierMarkers {
  done: StoredJson<DoneMarkerJson>;
  failedPages: StoredJson<FailedPagesMarkerJson>;
}

/** The markers an earlier assembly of the document left; a damaged one says nothing (this assembly replaces it). */
async function earlierMarkers(docId: string, storage: Storage): Promise<EarlierMarkers> {
  const keys = documentResultKeys(docId);
  const [done, failedPages] = await Promise.all([readUndamaged(keys.done, storage, parseDoneMarkerJson), readUndamaged(keys.failedPages, storage, parseFailedPagesMarkerJson)]);
  return { done, failedPages };
}

/** Whether a marker names `assembly`: this document job assembled the document already. */
function namesAssembly({ done, failedPages }: EarlierMarkers, assembly: string | undefined): boolean {
  return assembly !== undefined && (done.value?.assembly === assembly || failedPages.value?.assembly === assembly);
}

/** The stored document.json; undefined when it is missing or damaged (the document is then assembled again). */
async function storedDocument(docId: string, storage: Storage): Promise<DocumentResultJson | undefined> {
  return (await readUndamaged(documentResultKeys(docId).json, storage, parseDocumentResultJson)).value;
}

/** An object read with `parse` and its version; a damaged object has no value, a missing one no version either. */
async function readUndamaged<T>(key: string, storage: Storage, parse: (text: string, key: string) => T): Promise<StoredJson<T>> {
  let version: string;
  let body: Buffer;
  try {
    ({ version, body } = await storage.getVersioned(key));
  } catch (error) {
    if (error instanceof StorageError && error.code === 'not_found') return { version: null };
    throw error;
  }
  try {
    return { version, value: parse(body.toString('utf8'), key) };
  } catch (error) {
    if (error instanceof InvalidBoundaryDataError) return { version };
    throw error;
  }
}

/** An HTML comment that stays one comment whatever the reason says (no line breaks, no '--'). */
export function failedPageNote(page: number, reason: string): string {
  const text = reason.replace(/\s+/g, ' ').trim().replace(/-(?=-)/g, '- ');
  return `<!-- page ${page} failed: ${text} -->`;
}

/** One status per page 1…pageCount, in order; a page reported done and failed (a retry) counts as done. */
function completeStatuses(
  { docId, pageCount }: DocumentJobData,
  statuses: readonly PageStatus[],
  missingReason: (page: number) => string,
): Array<PageStatus | UnreportedPage> {
  const byPage = new Map<number, PageStatus>();
  for (const status of statuses) {
    if (!(Number.isInteger(status.page) && status.page >= 1 && status.page <= pageCount)) {
      throw new RangeError(`page ${status.page} is outside the document's pages 1-${pageCount}`);
    }
    if (byPage.get(status.page)?.status !== 'done') byPage.set(status.page, status);
  }
  return Array.from(
    { length: pageCount },
    (_, i): PageStatus | UnreportedPage =>
      byPage.get(i + 1) ?? { page: i + 1, status: 'unreported', key: pageResultKey(docId, i + 1, 'json'), reason: missingReason(i + 1) },
  );
}

async function readPages(statuses: ReadonlyArray<PageStatus | UnreportedPage>, storage: Storage, docId: string): Promise<ReadPage[]> {
  const pages: ReadPage[] = [];
  for (let start = 0; start < statuses.length; start += READ_CONCURRENCY) {
    pages.push(...(await Promise.all(statuses.slice(start, start + READ_CONCURRENCY).map((status) => readPage(status, storage, docId)))));
  }
  return pages;
}

async function readPage(status: PageStatus | UnreportedPage, storage: Storage, docId: string): Promise<ReadPage> {
  const { page } = status;
  if (status.status === 'done' && status.stored !== undefined) await commitStoredPages([status.stored], storage);
  const key = status.status === 'failed' ? pageResultKey(docId, page, 'json') : status.key;
  try {
    const result = parsePageResultJson((await storage.get(key)).toString('utf8'), key);
    return { page, status: 'done', key, result };
  } catch (error) {
    // A damaged page result fails that page, not the document: reading it again would find it the same.
    if (error instanceof InvalidBoundaryDataError) return status.status === 'failed' ? status : { page, status: 'failed', reason: error.message };
    if (error instanceof StorageError && error.code === 'not_found') {
      if (status.status === 'failed') return status;
      const reason = status.status === 'unreported' ? status.reason : `the page was reported done but ${key} is missing`;
      return { page, status: 'failed', reason };
    }
    // Storage that cannot answer now decides nothing, not even for a page reported failed (its result
    // may be there): the assembly fails and is tried again.
    throw error;
  }
}
