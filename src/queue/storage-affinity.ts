// Jobs belong to the storage their producer staged them in (job data `storage`). A worker configured
// with another storage does not touch such a job: it cannot read its source, and writing its results
// into the worker's own storage would assemble a document of failed pages there. Nor does it follow
// the job to the job's storage: where a worker writes, and with which credentials, is the operator's
// choice, never something a queued job can decide (and a file:// path means another folder on every
// host). The job goes back to the queue, delayed, with no try used, for a worker of its storage.
import { DelayedError, type Job } from 'bullmq';
import type { Logger } from 'pino';

/** How long a job for another storage waits before a worker may claim it again. */
export const FOREIGN_STORAGE_DELAY_MS = 30_000;

/**
 * Returns when `jobStorage` is the worker's `storageUrl`. Otherwise moves the job to the delayed set
 * and throws BullMQ's DelayedError, which the processor must let through: the job is neither failed
 * nor counted as a try.
 */
export async function leaveForeignStorageJob(job: Job, token: string | undefined, jobStorage: string, storageUrl: string, logger: Logger): Promise<void> {
  if (jobStorage === storageUrl) return;
  logger.warn(
    { jobId: job.id, docId: (job.data as { docId?: unknown }).docId, jobStorage, workerStorage: storageUrl, retryInMs: FOREIGN_STORAGE_DELAY_MS },
    'job belongs to another storage: left in the queue for a worker of that storage (start one with `scriptorium work --storage URL`)',
  );
  await job.moveToDelayed(Date.now() + FOREIGN_STORAGE_DELAY_MS, token);
  throw new DelayedError();
}
