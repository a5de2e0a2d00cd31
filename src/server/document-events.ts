// What happens to documents, as the server hears it from the queues' event streams: a page of a
// document settled (done, or failed for good), or a document settled (assembled, or its assembly
// failed). One listener per server process feeds the progress streams and the callbacks.
import { QueueEvents } from 'bullmq';

import { pagesOfJobId } from '../queue/job-ids.js';
import { DOCUMENTS, PAGE_QUEUES } from '../queue/queue-names.js';
import type { RedisConnectionOptions } from '../queue/redis.js';

export type DocumentEvent = 'page-settled' | 'document-settled';
type Listener = (docId: string, event: DocumentEvent) => void;

export class DocumentEvents {
  readonly #streams: QueueEvents[];
  readonly #listeners = new Set<Listener>();

  private constructor(documents: QueueEvents, pageQueues: readonly QueueEvents[]) {
    this.#streams = [documents, ...pageQueues];
    const documentSettled = ({ jobId }: { jobId: string }) => this.#emit(jobId, 'document-settled');
    const pageSettled = ({ jobId }: { jobId: string }) => {
      const job = pagesOfJobId(jobId);
      if (job !== undefined) this.#emit(job.docId, 'page-settled');
    };
    documents.on('completed', documentSettled);
    documents.on('failed', documentSettled);
    for (const pages of pageQueues) {
      pages.on('completed', pageSettled);
      pages.on('failed', pageSettled);
    }
  }

  /** `connection`: options for a `worker` connection (its reads block). */
  static async start(connection: RedisConnectionOptions): Promise<DocumentEvents> {
    const documents = new QueueEvents(DOCUMENTS.name, { connection, prefix: DOCUMENTS.prefix });
    const pageQueues = PAGE_QUEUES.map((queue) => new QueueEvents(queue.name, { connection, prefix: queue.prefix }));
    const streams = [documents, ...pageQueues];
    try {
      await Promise.all(streams.map((stream) => stream.waitUntilReady()));
    } catch (error) {
      await Promise.all(streams.map((stream) => stream.close()));
      throw error;
    }
    return new DocumentEvents(documents, pageQueues);
  }

  /** Calls `listener` for every event of every document from now on; returns the unsubscribe. */
  listen(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#listeners.clear();
    await Promise.all(this.#streams.map((stream) => stream.close()));
  }

  #emit(docId: string, event: DocumentEvent): void {
    for (const listener of [...this.#listeners]) listener(docId, event);
  }
}
