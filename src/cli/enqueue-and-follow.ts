// Enqueue inputs, print a line per input as it is queued, and optionally follow the documents to
// their end, printing where each one's results are: `scriptorium enqueue [--wait]` and `scriptorium run`.
// On a terminal, a progress line (enqueue-progress.ts) goes with the lines. With file storage, a
// finished document's results are linked under by-input/, named after its input (output/input-links.ts).
// With `room`, each new document waits until its page queue and Redis have room for it
// (queue/queue-capacity.ts), or stops the enqueue with a NoRoomError.
import path from 'node:path';

import { documentResultKeys } from '../jobs/storage-layout.js';
import { inputLinkName, linkResultsByInput } from '../output/input-links.js';
import { enqueueDocuments, type DocumentToQueue, type EnqueueOptions, type EnqueueSummary, type QueuedDocument } from '../producer/enqueue.js';
import { DocumentWatcher } from '../queue/document-watcher.js';
import { followPageJobs } from '../queue/page-job-events.js';
import { NoRoomError, type QueueCapacity } from '../queue/queue-capacity.js';
import { pageQueue } from '../queue/queue-names.js';
import { redisOptions } from '../queue/redis.js';
import { writeRunManifest } from '../producer/run-manifest.js';
import { describeCause } from '../storage/storage-error.js';
import {
  assembledLine,
  enqueueSummaryLine,
  exitStatusOf,
  failedLine,
  finishedLine,
  flaggedPagesLine,
  flaggedTotalLine,
  objectLocation,
  queuedLine,
  EXIT_ALL_DONE,
  EXIT_INTERRUPTED,
  EXIT_SOME_FAILED,
} from './document-report.js';
import { EnqueueProgress, type ProgressTerminal } from './enqueue-progress.js';

export interface EnqueueAndFollowOptions {
  inputs: readonly string[];
  enqueue: Omit<EnqueueOptions, 'connection' | 'onDocument' | 'signal'>;
  redisUrl: string;
  /** Wait for every queued document to be assembled (or to fail). */
  wait: boolean;
  /** Called once the inputs are queued, before waiting (e.g. to warn that no worker is running). */
  beforeWaiting?: (summary: EnqueueSummary) => Promise<void>;
  /** Stops enqueueing after the document in hand, and stops waiting (the jobs stay queued). */
  signal?: AbortSignal;
  /** Where the lines go. Default: stdout. */
  write?: (line: string) => void;
  /** Where progress is drawn (see progressTerminal). Default: nowhere. */
  progress?: ProgressTerminal;
  /** Room to wait for before each new document is queued. Default: none (queued at once). */
  room?: RoomSettings;
}

export interface RoomSettings {
  capacity: QueueCapacity;
  /** false (`enqueue --no-wait`): a document without room rejects with a NoRoomError instead of waiting. */
  wait: boolean;
  /** How often to look again. Default 5 s. */
  pollMs?: number;
  /** Where the line saying that it waits goes. Default: stderr. */
  note?: (line: string) => void;
}

const DEFAULT_ROOM_POLL_MS = 5_000;

/**
 * Resolves with the exit status: EXIT_ALL_DONE; EXIT_SOME_FAILED when an input, a page or a document
 * failed; EXIT_INTERRUPTED when `signal` stopped the wait.
 */
export async function enqueueAndFollow(options: EnqueueAndFollowOptions): Promise<number> {
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const { storage } = options.enqueue;
  const progress = options.progress === undefined ? undefined : new EnqueueProgress(options.progress, write);
  let watcher: DocumentWatcher | undefined;
  let pageEvents: { close(): Promise<void> } | undefined;
  // Lines of finished documents, each printed once its results are linked.
  const finishedLines: Promise<void>[] = [];
  /** Where a finished document's markdown is: through its by-input link when the storage has one. */
  const markdownAt = async (document: QueuedDocument): Promise<string> => {
    const name = inputLinkName(document.uri, options.inputs);
    const { markdown } = documentResultKeys(document.docId);
    try {
      const link = await linkResultsByInput(storage, name, document.docId);
      if (link !== undefined) return path.join(link, path.posix.basename(markdown));
    } catch (error) {
      write(`cannot link by-input/${name} to the results of ${document.uri}: ${describeCause(error)}`);
    }
    return objectLocation(storage, markdown);
  };
  try {
    if (options.wait) {
      // Started first: it hears of documents that finish while later inputs are still being enqueued.
      watcher = await DocumentWatcher.start(redisOptions(options.redisUrl, 'worker'));
      if (progress !== undefined) {
        const queue = pageQueue(options.enqueue.ocr.variant);
        pageEvents = await followPageJobs(redisOptions(options.redisUrl, 'worker'), queue, (docId, pages) => progress.pagesFinished(docId, pages));
      }
    }
    const print = (line: string) => (progress === undefined ? write(line) : progress.line(line));

    const summary = await enqueueDocuments(options.inputs, {
      ...options.enqueue,
      connection: redisOptions(options.redisUrl, 'client'),
      signal: options.signal,
      admit: options.room === undefined ? undefined : (document) => waitForRoom(document, options.room!, progress, options.signal),
      onDocument: (document) => {
        progress?.inputSettled(document);
        if (document.state === 'already-done') finishedLines.push(markdownAt(document).then((at) => print(queuedLine(document, at))));
        else print(queuedLine(document));
      },
    });
    await Promise.all(finishedLines.splice(0));
    progress?.clear();
    write(enqueueSummaryLine(summary));
    write(`${'manifest'.padEnd(14)} ${objectLocation(storage, await writeRunManifest(summary, storage))}`);
    if (watcher === undefined) return summary.rejected.length === 0 ? EXIT_ALL_DONE : EXIT_SOME_FAILED;

    const following = new Map(summary.queued.filter((document) => document.state !== 'already-done').map((document) => [document.docId, document]));
    await options.beforeWaiting?.(summary);
    if (following.size > 0) progress?.waitFor([...following.values()]);
    const settlements = await untilAborted(
      watcher.waitFor([...following.keys()], (settlement) => {
        progress?.documentFinished(settlement.docId);
        const document = following.get(settlement.docId)!;
        following.delete(settlement.docId);
        if (settlement.status === 'failed') print(failedLine(document, settlement.reason));
        else {
          finishedLines.push(
            markdownAt(document).then((at) => {
              print(assembledLine(document, settlement, at));
              const flagged = flaggedPagesLine(document, settlement);
              if (flagged !== undefined) print(flagged);
            }),
          );
        }
      }),
      options.signal,
    );
    await Promise.all(finishedLines);
    progress?.clear();
    if (settlements === undefined) {
      write(`interrupted with ${following.size} document${following.size === 1 ? '' : 's'} unfinished: the same command again resumes them`);
      return EXIT_INTERRUPTED;
    }
    if (settlements.length > 0) write(finishedLine(settlements));
    const flagged = flaggedTotalLine(settlements);
    if (flagged !== undefined) write(flagged);
    return exitStatusOf(summary, settlements);
  } finally {
    progress?.clear();
    await pageEvents?.close();
    await watcher?.close();
  }
}

/**
 * Resolves once the document's page queue and Redis have room for it, saying once that it waits (and
 * on a terminal, why, on the progress line), or once `signal` aborts (the enqueue then stops after
 * this document: the limit is soft); without `wait`, rejects with a NoRoomError instead.
 */
async function waitForRoom(document: DocumentToQueue, room: RoomSettings, progress: EnqueueProgress | undefined, signal: AbortSignal | undefined): Promise<void> {
  const pollMs = room.pollMs ?? DEFAULT_ROOM_POLL_MS;
  const note = room.note ?? ((line: string) => process.stderr.write(`${line}\n`));
  let waiting = false;
  while (signal?.aborted !== true) {
    const admission = await room.capacity.admit(document.variant, document.pageJobs);
    if (admission.admitted) break;
    if (!room.wait) throw new NoRoomError(document.uri, admission);
    if (!waiting) {
      note(`waiting for room for ${document.uri}: ${admission.message}; looking again every ${pollMs / 1000} s (Ctrl-C stops: what was queued stays queued)`);
      waiting = true;
    }
    progress?.waitingForRoom(admission.message);
    await untilAborted(new Promise((resolve) => setTimeout(resolve, pollMs)), signal);
  }
  if (waiting) progress?.waitingForRoom(undefined);
}

/** `work`'s result, or undefined once `signal` aborts. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (signal === undefined) return work;
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const abort = () => resolve(undefined);
    signal.addEventListener('abort', abort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(error);
      },
    );
  });
}
