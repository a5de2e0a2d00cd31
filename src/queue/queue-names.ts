// The two BullMQ queues of DESIGN.md's data flow. BullMQ refuses ':' in a queue name, so
// 'scriptorium:documents' becomes the queue 'documents' under the key prefix 'scriptorium': its Redis
// keys are then exactly 'scriptorium:documents:…', the names job-types.ts declares.
import { DOCUMENTS_QUEUE, PAGES_QUEUE } from '../jobs/job-types.js';

export interface QueueName {
  /** BullMQ's key prefix ('scriptorium'). */
  prefix: string;
  /** BullMQ's queue name ('documents', 'pages'). */
  name: string;
}

function splitQueueName(fullName: string): QueueName {
  const at = fullName.lastIndexOf(':');
  return { prefix: fullName.slice(0, at), name: fullName.slice(at + 1) };
}

/** Parent jobs: one per document, assembled once all its page jobs have finished. */
export const DOCUMENTS = splitQueueName(DOCUMENTS_QUEUE);
/** Child jobs: one per page (V3 parse-multi: one per page group). */
export const PAGES = splitQueueName(PAGES_QUEUE);

/** The Redis key of a job, as BullMQ names children in getChildrenValues and getIgnoredChildrenFailures. */
export function jobKey(queue: QueueName, jobId: string): string {
  return `${queue.prefix}:${queue.name}:${jobId}`;
}

/** The Redis stream of the queue's events (BullMQ's QueueEvents reads it). */
export function eventStreamKey(queue: QueueName): string {
  return `${queue.prefix}:${queue.name}:events`;
}

/** The job id in a job key of `queue`; undefined for a key of another queue. */
export function jobIdOfKey(queue: QueueName, key: string): string | undefined {
  const start = `${queue.prefix}:${queue.name}:`;
  return key.startsWith(start) ? key.slice(start.length) : undefined;
}
