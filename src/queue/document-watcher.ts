// Follows document jobs to their end through the documents queue's event stream. The watcher reads
// the stream from the position it had when the watcher started, so a document that finishes while it
// is still being enqueued is not missed. Only final outcomes appear there: BullMQ writes 'failed'
// once a job has no tries left.
import { QueueEvents } from 'bullmq';

import { parseDocumentOutcome, type DocumentOutcome } from '../jobs/job-types.js';
import { documentJobId } from './job-ids.js';
import { DOCUMENTS, eventStreamKey } from './queue-names.js';
import { connectRedis, type RedisConnectionOptions } from './redis.js';

export type DocumentSettlement =
  | { docId: string; status: 'completed'; returnvalue: DocumentOutcome }
  | { docId: string; status: 'failed'; reason: string };

export class DocumentWatcher {
  readonly #events: QueueEvents;
  readonly #settled = new Map<string, DocumentSettlement>();
  readonly #listeners = new Set<() => void>();

  private constructor(events: QueueEvents) {
    this.#events = events;
    events.on('completed', ({ jobId, returnvalue }) => this.#settle(completed(jobId, returnvalue)));
    events.on('failed', ({ jobId, failedReason }) => this.#settle({ docId: jobId, status: 'failed', reason: failedReason }));
  }

  /** `connection`: options for a `worker` connection (see redisOptions), as its reads block. */
  static async start(connection: RedisConnectionOptions): Promise<DocumentWatcher> {
    const client = connectRedis(connection);
    let lastEventId: string;
    try {
      const [last] = await client.xrevrange(eventStreamKey(DOCUMENTS), '+', '-', 'COUNT', 1);
      lastEventId = last?.[0] ?? '0-0';
    } finally {
      client.disconnect();
    }
    const events = new QueueEvents(DOCUMENTS.name, { connection, prefix: DOCUMENTS.prefix, lastEventId });
    await events.waitUntilReady();
    return new DocumentWatcher(events);
  }

  /**
   * Resolves with one settlement per docId, in docId order, once all have settled; `onSettled` hears
   * of each as it happens. Waits as long as it takes: without a worker, nothing settles.
   */
  waitFor(docIds: readonly string[], onSettled?: (settlement: DocumentSettlement) => void): Promise<DocumentSettlement[]> {
    const pending = new Set(docIds.map(documentJobId));
    return new Promise((resolve) => {
      const check = () => {
        for (const jobId of pending) {
          const settlement = this.#settled.get(jobId);
          if (settlement === undefined) continue;
          pending.delete(jobId);
          onSettled?.(settlement);
        }
        if (pending.size > 0) return;
        this.#listeners.delete(check);
        resolve(docIds.map((docId) => this.#settled.get(documentJobId(docId)) as DocumentSettlement));
      };
      this.#listeners.add(check);
      check();
    });
  }

  close(): Promise<void> {
    return this.#events.close();
  }

  #settle(settlement: DocumentSettlement): void {
    this.#settled.set(settlement.docId, settlement);
    for (const listener of [...this.#listeners]) listener();
  }
}

/** A return value that is no document outcome (another version's worker) settles the document as failed, saying so. */
function completed(docId: string, returnvalue: unknown): DocumentSettlement {
  try {
    return { docId, status: 'completed', returnvalue: parseDocumentOutcome(returnvalue) };
  } catch (error) {
    return { docId, status: 'failed', reason: (error as Error).message };
  }
}
