// The BullMQ queues of docs/design.md's data flow: one documents queue and one page queue per model
// variant, so that a worker only ever claims pages its model can read and workers of several variants
// can serve one deployment. BullMQ refuses ':' in a queue name, so '{scriptorium}:documents' becomes
// the queue 'documents' under the key prefix '{scriptorium}': its Redis keys are then exactly
// '{scriptorium}:documents:…', and a V3 page job's are '{scriptorium}:pages-v3:…'. The braces are a
// Redis Cluster hash tag: every queue's keys, and the project's own keys named after the prefix, hash
// to one slot, as BullMQ's scripts and flows (a document job and its page jobs, in different queues)
// need on a cluster.
import { VARIANTS, type Variant } from '../vocabulary/ocr-vocabulary.js';
import { DOCUMENTS_QUEUE } from '../jobs/job-types.js';

export interface QueueName {
  /** BullMQ's key prefix ('{scriptorium}'). */
  prefix: string;
  /** BullMQ's queue name ('documents', 'pages-v3'). */
  name: string;
}

function splitQueueName(fullName: string): QueueName {
  const at = fullName.lastIndexOf(':');
  return { prefix: fullName.slice(0, at), name: fullName.slice(at + 1) };
}

/** Parent jobs: one per document, assembled once all its page jobs have finished. */
export const DOCUMENTS = splitQueueName(DOCUMENTS_QUEUE);

/** Child jobs of `variant`'s documents: one per page (V3 parse-multi: one per page group). */
export function pageQueue(variant: Variant): QueueName {
  return { prefix: DOCUMENTS.prefix, name: `pages-${variant}` };
}

/** Every page queue, in VARIANTS order. */
export const PAGE_QUEUES: readonly QueueName[] = VARIANTS.map(pageQueue);

/** '{scriptorium}:pages-v3', as status, metrics and the dashboard name a queue. */
export function fullQueueName(queue: QueueName): string {
  return `${queue.prefix}:${queue.name}`;
}

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

/** The job id in a job key of any page queue; undefined for any other key. */
export function pageJobIdOfKey(key: string): string | undefined {
  for (const queue of PAGE_QUEUES) {
    const jobId = jobIdOfKey(queue, key);
    if (jobId !== undefined) return jobId;
  }
  return undefined;
}
