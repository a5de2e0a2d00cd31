// `scriptorium retry` and the viewer's retry button: a document assembled with failed pages (its
// _FAILED_PAGES marker says which and why) is queued again from its staged source with the options it
// was read with. The producer's enqueue then queues exactly the pages without a stored result, that
// is the failed ones, or only the chosen ones of them, and the document is assembled again (a failed
// page not chosen keeps its reason).

import { parseFailedPagesMarkerJson } from '../jobs/result-json.js';
import { docIdOfFailedPagesMarker, documentKeys, documentResultKeys, RESULTS_FOLDER } from '../jobs/storage-layout.js';
import { type Storage } from '../storage/storage.js';
import { readStored } from '../storage/storage-error.js';
import { enqueueDocuments, type QueuedDocument, type RejectedInput } from './enqueue.js';
import type { RedisConnectionOptions } from '../queue/redis.js';

export interface RetryOptions {
  storage: Storage;
  /** Options for a `client` connection (see redisOptions). */
  connection: RedisConnectionOptions;
  /** Opens an encrypted PDF again (its sealed password stayed with the old jobs). */
  pdfPassword?: string;
  /** Tries per page. Default: enqueue's. */
  attempts?: number;
  /** Only these failed pages. Default: every failed page. */
  pages?: readonly number[];
}

export type RetryOutcome =
  | { docId: string; status: 'requeued'; failedPages: number; queued: QueuedDocument }
  | { docId: string; status: 'not-failed'; reason: string }
  | { docId: string; status: 'rejected'; reason: string };

export async function retryFailedPages(docId: string, options: RetryOptions): Promise<RetryOutcome> {
  const { storage } = options;
  const marker = await readStored(documentResultKeys(docId).failedPages, storage, parseFailedPagesMarkerJson);
  if (marker === undefined) {
    const done = await storage.exists(documentResultKeys(docId).done);
    return { docId, status: 'not-failed', reason: done ? 'every page of it succeeded' : 'it has no failed pages recorded (unknown, or still being read)' };
  }
  const failed = new Set(marker.failedPages.map(({ page }) => page));
  const notFailed = options.pages?.filter((page) => !failed.has(page)) ?? [];
  if (notFailed.length > 0) {
    return { docId, status: 'not-failed', reason: `page ${notFailed.join(', ')} did not fail (the failed pages: ${[...failed].join(', ')})` };
  }
  const source = documentKeys(docId, marker.type).source;
  const size = (await storage.stat(source)).size;
  const summary = await enqueueDocuments([{ kind: 'document', document: { uri: marker.sourceUri, size, bytes: () => storage.get(source) } }], {
    ocr: marker.options,
    storage,
    connection: options.connection,
    pdfPassword: options.pdfPassword,
    attempts: options.attempts,
    onlyPages: options.pages,
  });
  const rejected: RejectedInput | undefined = summary.rejected[0];
  if (rejected !== undefined) return { docId, status: 'rejected', reason: rejected.reason };
  const queued = summary.queued[0];
  if (queued.docId !== docId) throw new Error(`the staged source of ${docId} now has the docId ${queued.docId}: it was replaced since`);
  return { docId, status: 'requeued', failedPages: options.pages?.length ?? marker.failedPages.length, queued };
}

/** Every docId with a _FAILED_PAGES marker, in key order (one listing of results/). */
export async function* documentsWithFailedPages(storage: Storage): AsyncGenerator<string> {
  for await (const object of storage.list(RESULTS_FOLDER, { recursive: true })) {
    const docId = docIdOfFailedPagesMarker(object.key);
    if (docId !== undefined) yield docId;
  }
}
