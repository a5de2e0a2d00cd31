// `scriptorium retry --flagged`: the pages of an assembled document that need review (document.json's
// `flagged` with max_tokens, timeout or repetition) are read again from the staged source, with the
// options the document was read with (its _DONE marker) changed as the user asks: another mode, a
// larger token budget. Each page gets a job of its own under the document's docId, so its new result
// replaces the old one; the other pages keep theirs, and the document is assembled again. A page
// whose new reading fails keeps its old result: the page worker finds it stored on the next try.
import { FlowProducer, Queue } from 'bullmq';
import type { RedisOptions } from 'ioredis';

import { DocumentError } from '../documents/document.js';
import { InvalidBoundaryDataError } from '../jobs/boundary-data.js';
import type { DocumentJobData, OcrJobOptions, PageJobData } from '../jobs/job-types.js';
import { needsReview } from '../jobs/page-flags.js';
import { parseDocumentResultJson, parseDoneMarkerJson, type DocumentResultJson } from '../jobs/result-json.js';
import { docIdOfDoneMarker, documentKeys, documentResultKeys, RESULTS_FOLDER } from '../jobs/storage-layout.js';
import { documentJobId, pageJobId } from '../queue/job-ids.js';
import { DOCUMENTS, pageQueue } from '../queue/queue-names.js';
import type { Storage } from '../storage/storage.js';
import { readStored, StorageError } from '../storage/storage-error.js';
import { documentFlow } from './enqueue.js';
import { changedOcrJobOptions, type OcrJobChoices } from './ocr-job-options.js';
import { openWithPassword, sealedPasswordOf } from './plan-document.js';

export interface FlaggedRetryOptions {
  storage: Storage;
  /** Options for a `client` connection (see redisOptions). */
  connection: RedisOptions;
  /** What to read the pages with instead of the document's own options; the rest stays. */
  changes: OcrJobChoices;
  /** Opens an encrypted PDF again (its sealed password stayed with the old jobs). */
  pdfPassword?: string;
  /** Tries per page. Default: enqueue's. */
  attempts?: number;
}

export type FlaggedRetryOutcome =
  | { docId: string; status: 'requeued'; uri: string; pages: number[]; options: OcrJobOptions }
  /** Assembled, with no page that needs review (maybe flagged empty). */
  | { docId: string; status: 'nothing-flagged' }
  | { docId: string; status: 'not-retried'; reason: string };

/** Job states in which a job is still to run or running: its document is not to be touched. */
const BUSY_STATES = new Set(['waiting', 'waiting-children', 'prioritized', 'delayed', 'active', 'paused']);

export async function retryFlaggedPages(docId: string, options: FlaggedRetryOptions): Promise<FlaggedRetryOutcome> {
  try {
    return await requeueFlaggedPages(docId, options);
  } catch (error) {
    // A damaged document.json or _DONE marker: this document's problem, not the others'.
    if (error instanceof InvalidBoundaryDataError) return { docId, status: 'not-retried', reason: error.message };
    throw error;
  }
}

async function requeueFlaggedPages(docId: string, options: FlaggedRetryOptions): Promise<FlaggedRetryOutcome> {
  const { storage } = options;
  const notRetried = (reason: string): FlaggedRetryOutcome => ({ docId, status: 'not-retried', reason });
  const keys = documentResultKeys(docId);
  const document = await readStored(keys.json, storage, parseDocumentResultJson);
  if (document === undefined) return notRetried('it has not been assembled (unknown, or still being read)');
  if (await storage.exists(keys.failedPages)) return notRetried(`it has failed pages: read them again first with \`scriptorium retry ${docId}\``);
  const pages = (document.flagged ?? []).filter(({ flags }) => needsReview(flags)).map(({ page }) => page);
  if (pages.length === 0) return { docId, status: 'nothing-flagged' };
  const marker = await readStored(keys.done, storage, parseDoneMarkerJson);
  if (marker === undefined) return notRetried('it has no _DONE marker: it is being assembled again');

  let readWith: OcrJobOptions;
  try {
    readWith = changedOcrJobOptions(marker.options, options.changes);
  } catch (error) {
    if (error instanceof RangeError) return notRetried(error.message);
    throw error;
  }
  const source = documentKeys(docId, document.source.type).source;
  const bytes = await storage.get(source).catch((error: unknown) => {
    if (error instanceof StorageError && error.code === 'not_found') return undefined;
    throw error;
  });
  if (bytes === undefined) return notRetried(`its staged source ${source} is gone`);
  let opened: { password?: string };
  try {
    opened = await openWithPassword(bytes, options.pdfPassword);
  } catch (error) {
    if (error instanceof DocumentError) return notRetried(`its staged source cannot be opened: ${error.reason}`);
    throw error;
  }

  const busy = await removeSettledJobs(docId, readWith, pages, options.connection);
  if (busy) return notRetried('it is queued or being read now');
  const enqueuedAt = Date.now();
  const documentJob = documentJobOf(document, marker.options, storage.url, enqueuedAt);
  const sealed = await sealedPasswordOf(opened, bytes);
  const pageJobs = pages.map(
    (page): PageJobData => ({
      docId,
      sourceUri: documentJob.sourceUri,
      storage: storage.url,
      type: documentJob.type,
      firstPage: page,
      lastPage: page,
      keys: documentJob.keys,
      options: readWith,
      ...sealed,
      enqueuedAt,
    }),
  );
  const flows = new FlowProducer({ connection: options.connection, prefix: DOCUMENTS.prefix });
  try {
    await flows.add(documentFlow({ docId, documentJob, pageJobs }, { attempts: options.attempts }));
  } finally {
    await flows.close();
  }
  return { docId, status: 'requeued', uri: document.source.uri, pages, options: readWith };
}

/** Every docId with a _DONE marker, in key order (one listing of results/): the documents --flagged looks at. */
export async function* documentsDone(storage: Storage): AsyncGenerator<string> {
  for await (const object of storage.list(RESULTS_FOLDER, { recursive: true })) {
    const docId = docIdOfDoneMarker(object.key);
    if (docId !== undefined) yield docId;
  }
}

/** The document job of a document read again: as first queued, with the options its docId stands for. */
function documentJobOf(document: DocumentResultJson, options: OcrJobOptions, storage: string, enqueuedAt: number): DocumentJobData {
  const { docId, source, damage } = document;
  return {
    docId,
    sourceUri: source.uri,
    storage,
    type: source.type,
    pageCount: source.pages,
    keys: documentKeys(docId, source.type),
    options,
    enqueuedAt,
    ...(damage === undefined ? {} : { damage }),
  };
}

/**
 * Removes the document's earlier document job and the earlier jobs of these pages, which BullMQ
 * would keep in place of the new ones (their ids are the same); true, removing nothing, when one of
 * them is still to run or running.
 */
async function removeSettledJobs(docId: string, options: OcrJobOptions, pages: readonly number[], connection: RedisOptions): Promise<boolean> {
  const queue = pageQueue(options.variant);
  const documents = new Queue(DOCUMENTS.name, { connection, prefix: DOCUMENTS.prefix });
  const pageJobs = new Queue(queue.name, { connection, prefix: queue.prefix });
  const pageJobsHeld = () => Promise.all(pages.map((page) => pageJobs.getJob(pageJobId(docId, page, page))));
  try {
    const documentJob = await documents.getJob(documentJobId(docId));
    const held = [documentJob, ...(await pageJobsHeld())].filter((job) => job !== undefined);
    const states = await Promise.all(held.map((job) => job.getState()));
    if (states.some((state) => BUSY_STATES.has(state))) return true;
    await documentJob?.remove({ removeChildren: true });
    // Page jobs that outlived their document job, or belong to none.
    for (const job of await pageJobsHeld()) await job?.remove();
    return false;
  } finally {
    await Promise.all([documents.close(), pageJobs.close()]);
  }
}
