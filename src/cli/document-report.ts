// What `enqueue` and `run` print about each input: how it was queued, then how its document ended,
// and the exit status a script can act on.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { needsReview } from '../jobs/page-flags.js';
import type { EnqueueSummary, QueuedDocument, RejectedInput } from '../producer/enqueue.js';
import type { DocumentSettlement } from '../queue/document-watcher.js';
import type { Storage } from '../storage/storage.js';

type AssembledDocument = Extract<DocumentSettlement, { status: 'completed' }>;

/** Every input was read into a document with all its pages done (or was already done). */
export const EXIT_ALL_DONE = 0;
/** The command ran, but some inputs were rejected, some pages failed or some documents failed. */
export const EXIT_SOME_FAILED = 3;
/** `enqueue --no-wait` found no room for a document in the queue and stopped there (EX_TEMPFAIL: try again later). */
export const EXIT_NO_ROOM = 75;
/** Stopped by SIGINT or SIGTERM before every document had finished (128 + SIGINT). */
export const EXIT_INTERRUPTED = 130;

const STATE_LABELS: Record<QueuedDocument['state'] | 'rejected', string> = {
  enqueued: 'enqueued',
  'already-done': 'already done',
  'already-queued': 'already queued',
  retried: 'retried',
  rejected: 'rejected',
};

/** One line as soon as the producer has settled an input; a document done earlier says where its markdown is (`markdownAt`). */
export function queuedLine(document: QueuedDocument | RejectedInput, markdownAt?: string): string {
  const label = STATE_LABELS[document.state].padEnd(14);
  if (document.state === 'rejected') return `${label} ${document.uri}: ${document.reason}`;
  const pages = `${document.pages} page${document.pages === 1 ? '' : 's'}${document.damage === undefined ? '' : ` (${document.damage})`}`;
  const line = `${label} ${document.uri}  ${document.docId}  ${pages}`;
  return markdownAt === undefined ? line : `${line}  →  ${markdownAt}`;
}

export function enqueueSummaryLine(summary: EnqueueSummary): string {
  const total = summary.queued.length + summary.rejected.length;
  return (
    `${total} input document${total === 1 ? '' : 's'}: ${summary.documents} enqueued (${summary.pages} page${summary.pages === 1 ? '' : 's'}), ` +
    `${summary.skippedDone} already done, ${summary.alreadyQueued} already queued, ${summary.rejected.length} rejected`
  );
}

/** Where a user finds an object: a file path for file:// storage, else the object's URL. */
export function objectLocation(storage: Storage, key: string): string {
  if (storage.url.startsWith('file:')) return path.join(fileURLToPath(storage.url), key);
  return `${storage.url.replace(/\/$/, '')}/${key}`;
}

/** One line when a document could not be assembled. */
export function failedLine(document: QueuedDocument, reason: string): string {
  return `failed         ${document.uri}: the document could not be assembled: ${reason}`;
}

/** One line when a document has been assembled, its markdown at `markdownAt`. */
export function assembledLine(document: QueuedDocument, { returnvalue }: AssembledDocument, markdownAt: string): string {
  const { failedPages, damage } = returnvalue;
  const failed = failedPages.map(({ page, reason }) => `\n               page ${page} failed: ${reason}`).join('');
  const label = failedPages.length === 0 ? 'done' : `done, ${failedPages.length} of ${document.pages} pages failed`;
  const damaged = damage === undefined ? '' : `\n               partial: ${damage}`;
  return `${label.padEnd(14)} ${document.uri}  →  ${markdownAt}${damaged}${failed}`;
}

/** After an assembled document's line, its flagged pages with their flags; undefined when it has none. */
export function flaggedPagesLine(document: QueuedDocument, { returnvalue }: AssembledDocument): string | undefined {
  const { flagged = [] } = returnvalue;
  if (flagged.length === 0) return undefined;
  return `${'flagged'.padEnd(14)} ${document.uri}  ${flagged.map(({ page, flags }) => `page ${page}: ${flags.join(', ')}`).join('; ')}`;
}

/** The last line of a run: documents complete, partial and failed. */
export function finishedLine(settlements: readonly DocumentSettlement[]): string {
  const complete = settlements.filter((s) => s.status === 'completed' && s.returnvalue.failedPages.length === 0).length;
  const failed = settlements.filter((s) => s.status === 'failed').length;
  const partial = settlements.length - complete - failed;
  return `${settlements.length} document${settlements.length === 1 ? '' : 's'} finished: ${complete} complete, ${partial} with failed pages, ${failed} failed`;
}

/**
 * After the last line, the flagged pages of the documents assembled and those that need review;
 * undefined when none is flagged. Flags leave the exit status alone: the pages were read.
 */
export function flaggedTotalLine(settlements: readonly DocumentSettlement[]): string | undefined {
  const flagged = settlements.flatMap((s) => (s.status === 'completed' ? (s.returnvalue.flagged ?? []) : []));
  if (flagged.length === 0) return undefined;
  const review = flagged.filter(({ flags }) => needsReview(flags)).length;
  const retry = review === 0 ? '' : ': `scriptorium retry --flagged` reads them again';
  return `${flagged.length} page${flagged.length === 1 ? '' : 's'} flagged, ${review} needing review${retry}`;
}

export function exitStatusOf(summary: EnqueueSummary, settlements: readonly DocumentSettlement[]): number {
  const allDone = settlements.every((s) => s.status === 'completed' && s.returnvalue.failedPages.length === 0 && s.returnvalue.damage === undefined);
  return summary.rejected.length === 0 && allDone ? EXIT_ALL_DONE : EXIT_SOME_FAILED;
}
