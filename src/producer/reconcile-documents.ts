// `scriptorium reconcile`: recovery after Redis lost its data (emptied, or a server restarted without
// persistence). Storage outlives Redis: every staged document (staging/<docId>/) that is not finished
// (no _DONE, no _FAILED_PAGES: that one is `retry`'s, no _CANCELLED) and whose document job is not in
// Redis is queued again from its staged source and the document job recorded beside it
// (staging/<docId>/job.json), through the producer's enqueue: exactly its pages without a stored
// result, and the document job that assembles them. A document whose jobs vanished mid-run is found
// the same way as one that never started.
import { Queue } from 'bullmq';
import type { RedisOptions } from 'ioredis';

import { parseDocumentJobData, type DocumentJobData } from '../jobs/job-types.js';
import { cancelledMarkerKey, docIdOfStagedKey, documentResultKeys, pageResultKey, pageResultsFolder, stagedDocumentsFolder, stagedJobKey } from '../jobs/storage-layout.js';
import { documentJobId } from '../queue/job-ids.js';
import type { PageJobLifecycle } from '../queue/job-options.js';
import { DOCUMENTS } from '../queue/queue-names.js';
import type { Storage } from '../storage/storage.js';
import { StorageError } from '../storage/storage-error.js';
import { enqueueDocuments } from './enqueue.js';
import { mapInOrder } from './map-in-order.js';

export interface ReconcileOptions extends Pick<PageJobLifecycle, 'attempts'> {
  storage: Storage;
  /** Options for a `client` connection (see redisOptions). */
  connection: RedisOptions;
  /** Only documents whose docId starts with these hex digits. Default: all. */
  docIdPrefix?: string;
  /** Say what would be queued, queue nothing. */
  dryRun?: boolean;
  /** Opens an encrypted PDF again (its sealed password went with the lost jobs). */
  pdfPassword?: string;
  /** Documents looked at and queued at once (default RECONCILE_CONCURRENCY); outcomes stay in docId order. */
  concurrency?: number;
}

/**
 * Each document costs a few storage and Redis round trips, and one to be queued a read of its source
 * and an enqueue: one at a time, a 100,000-page storage took 18 minutes (11 documents a second), most
 * of it waiting. Eight at once keep those waits overlapping while holding at most eight sources in memory.
 */
export const RECONCILE_CONCURRENCY = 8;

/** What reconcile found for one staged document, and did. */
export type ReconcileOutcome =
  | { docId: string; status: 'finished'; marker: 'done' | 'failed-pages' | 'cancelled' }
  | { docId: string; status: 'in-queue'; state: string }
  | { docId: string; status: 'queued' | 'would-queue'; uri: string; pageCount: number; pagesToRead: number }
  | { docId: string; status: 'not-queued'; reason: string };

/** Every staged document, in docId order, with what was found and done (one listing of staging/; `concurrency` documents at once). */
export async function* reconcileDocuments(options: ReconcileOptions): AsyncGenerator<ReconcileOutcome> {
  const documents = new Queue(DOCUMENTS.name, { connection: options.connection, prefix: DOCUMENTS.prefix });
  try {
    // Closing a queue whose connection is still opening rejects out of reach: open it first.
    await documents.waitUntilReady();
    const staged = stagedDocIds(options.storage, options.docIdPrefix);
    yield* mapInOrder(staged, options.concurrency ?? RECONCILE_CONCURRENCY, (docId) => reconcileDocument(docId, documents, options));
  } finally {
    await documents.close();
  }
}

async function reconcileDocument(docId: string, documents: Queue, options: ReconcileOptions): Promise<ReconcileOutcome> {
  const { storage } = options;
  const results = documentResultKeys(docId);
  if (await storage.exists(results.done)) return { docId, status: 'finished', marker: 'done' };
  if (await storage.exists(results.failedPages)) return { docId, status: 'finished', marker: 'failed-pages' };
  if (await storage.exists(cancelledMarkerKey(docId))) return { docId, status: 'finished', marker: 'cancelled' };
  const job = await documents.getJob(documentJobId(docId));
  if (job !== undefined) return { docId, status: 'in-queue', state: await job.getState() };
  const recorded = await readStagedJob(docId, storage);
  if (typeof recorded === 'string') return { docId, status: 'not-queued', reason: recorded };
  const found = { docId, uri: recorded.sourceUri, pageCount: recorded.pageCount, pagesToRead: await pagesWithoutResults(recorded, storage) };
  if (options.dryRun) return { ...found, status: 'would-queue' };

  const source = recorded.keys.source;
  const size = (await storage.stat(source)).size;
  const summary = await enqueueDocuments([{ kind: 'document', document: { uri: recorded.sourceUri, size, bytes: () => storage.get(source) } }], {
    ocr: recorded.options,
    storage,
    connection: options.connection,
    pdfPassword: options.pdfPassword,
    attempts: options.attempts,
  });
  const rejected = summary.rejected[0];
  if (rejected !== undefined) return { docId, status: 'not-queued', reason: `its staged source cannot be read again: ${rejected.reason}` };
  const queued = summary.queued[0];
  if (queued.docId !== docId) return { docId, status: 'not-queued', reason: `its staged source now has the docId ${queued.docId}: it was replaced since` };
  if (queued.state !== 'enqueued') return { docId, status: 'in-queue', state: queued.state };
  return { ...found, status: 'queued' };
}

/** The docIds under staging/ (of `docIdPrefix`), each once: a listing gives a document's keys one after the other. */
async function* stagedDocIds(storage: Storage, docIdPrefix?: string): AsyncGenerator<string> {
  let previous: string | undefined;
  for await (const object of storage.list(stagedDocumentsFolder(docIdPrefix), { recursive: true })) {
    const docId = docIdOfStagedKey(object.key);
    if (docId === undefined || docId === previous) continue;
    previous = docId;
    yield docId;
  }
}

/** The document job recorded at staging, or why there is none to queue it from. */
async function readStagedJob(docId: string, storage: Storage): Promise<DocumentJobData | string> {
  let text: string;
  try {
    text = (await storage.get(stagedJobKey(docId))).toString('utf8');
  } catch (error) {
    if (error instanceof StorageError && error.code === 'not_found') {
      return 'it was staged without its document job (by an earlier version): enqueue its input again';
    }
    throw error;
  }
  try {
    return parseDocumentJobData(JSON.parse(text));
  } catch (error) {
    return `its recorded document job is unreadable: ${(error as Error).message}`;
  }
}

async function pagesWithoutResults(job: DocumentJobData, storage: Storage): Promise<number> {
  const stored = new Set<string>();
  for await (const object of storage.list(pageResultsFolder(job.docId))) stored.add(object.key);
  let missing = 0;
  for (let page = 1; page <= job.pageCount; page++) if (!stored.has(pageResultKey(job.docId, page, 'json'))) missing++;
  return missing;
}
