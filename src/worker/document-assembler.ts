// The last step of a document, once all its page jobs have settled: results/<docId>/document.md (the
// pages' markdown in order), document.json (pages, failed pages with reasons, stage statistics),
// then the _DONE marker. The marker goes last, so a crash part-way never leaves a marker without
// the files, and assembling again after a crash rewrites the same files.
import { InvalidBoundaryDataError } from '../jobs/boundary-data.js';
import type { DocumentJobData, Stage } from '../jobs/job-types.js';
import { parsePageResultJson, type DocumentResultJson, type PageResultJson } from '../jobs/result-json.js';
import { documentResultKeys } from '../jobs/storage-layout.js';
import type { Storage } from '../storage/storage.js';
import { StorageError } from '../storage/storage-error.js';
import { summarizeStageTimes, type StageSummary } from './stage-stats.js';

/** How one page of the document ended, as its page job reported it. */
export type PageStatus =
  | { page: number; status: 'done'; /** results/<docId>/pages/<nnnn>.json */ key: string }
  | { page: number; status: 'failed'; reason: string };

/** Between pages in document.md: the marker the official scripts and `scriptorium ocr` use. */
export const PAGE_SPLIT = '\n\n<--- Page Split --->\n\n';

/** Page results read at once from storage. */
const READ_CONCURRENCY = 16;

type ReadPage = { page: number; status: 'done'; key: string; result: PageResultJson } | { page: number; status: 'failed'; reason: string };

/**
 * Writes the document's results from its pages' statuses and page JSONs. Every page 1…pageCount is
 * in the result: one with no status is failed ("no page result was reported"), and a done page whose
 * JSON is missing from storage or damaged is failed too. Storage errors other than a missing page reject, so the
 * job can be retried.
 */
export async function assembleDocument(job: DocumentJobData, statuses: readonly PageStatus[], storage: Storage): Promise<DocumentResultJson> {
  const pages = await readPages(completeStatuses(job.pageCount, statuses), storage);
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
    completedAt,
  };
  const markdown = pages.map((page) => (page.status === 'done' ? page.result.markdown : failedPageNote(page.page, page.reason))).join(PAGE_SPLIT);

  const keys = documentResultKeys(job.docId);
  await Promise.all([
    storage.put(keys.markdown, Buffer.from(`${markdown}\n`), { contentType: 'text/markdown; charset=utf-8' }),
    storage.put(keys.json, Buffer.from(`${JSON.stringify(document, null, 2)}\n`), { contentType: 'application/json' }),
  ]);
  await storage.put(keys.done, Buffer.from(`${JSON.stringify({ docId: job.docId, completedAt })}\n`), { contentType: 'application/json' });
  return document;
}

/** An HTML comment that stays one comment whatever the reason says (no line breaks, no '--'). */
export function failedPageNote(page: number, reason: string): string {
  const text = reason.replace(/\s+/g, ' ').trim().replace(/-(?=-)/g, '- ');
  return `<!-- page ${page} failed: ${text} -->`;
}

/** One status per page 1…pageCount, in order; a page reported done and failed (a retry) counts as done. */
function completeStatuses(pageCount: number, statuses: readonly PageStatus[]): PageStatus[] {
  const byPage = new Map<number, PageStatus>();
  for (const status of statuses) {
    if (!(Number.isInteger(status.page) && status.page >= 1 && status.page <= pageCount)) {
      throw new RangeError(`page ${status.page} is outside the document's pages 1-${pageCount}`);
    }
    if (byPage.get(status.page)?.status !== 'done') byPage.set(status.page, status);
  }
  return Array.from(
    { length: pageCount },
    (_, i): PageStatus => byPage.get(i + 1) ?? { page: i + 1, status: 'failed', reason: 'no page result was reported' },
  );
}

async function readPages(statuses: readonly PageStatus[], storage: Storage): Promise<ReadPage[]> {
  const pages: ReadPage[] = [];
  for (let start = 0; start < statuses.length; start += READ_CONCURRENCY) {
    pages.push(...(await Promise.all(statuses.slice(start, start + READ_CONCURRENCY).map((status) => readPage(status, storage)))));
  }
  return pages;
}

async function readPage(status: PageStatus, storage: Storage): Promise<ReadPage> {
  if (status.status === 'failed') return status;
  try {
    const result = parsePageResultJson((await storage.get(status.key)).toString('utf8'), status.key);
    return { ...status, result };
  } catch (error) {
    // A damaged page result fails that page, not the document: reading it again would find it the same.
    if (error instanceof InvalidBoundaryDataError) return { page: status.page, status: 'failed', reason: error.message };
    if (error instanceof StorageError && error.code === 'not_found') {
      return { page: status.page, status: 'failed', reason: `the page was reported done but ${status.key} is missing` };
    }
    throw error;
  }
}
