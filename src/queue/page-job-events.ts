// Following page jobs to their end through a page queue's event stream, for progress displays.
import { QueueEvents } from 'bullmq';

import { pagesOfJobId } from './job-ids.js';
import type { QueueName } from './queue-names.js';
import type { RedisConnectionOptions } from './redis.js';

/**
 * Tells `onPages` of each job of the page `queue` that finishes from now on (done, or failed for good: BullMQ writes
 * 'failed' once a job has no tries left), with its docId and page count. For progress only: a page
 * finished before this listens is counted when its document finishes. `connection`: options for a
 * `worker` connection (see redisOptions), as its reads block. Close the returned events when done.
 */
export async function followPageJobs(connection: RedisConnectionOptions, queue: QueueName, onPages: (docId: string, pages: number) => void): Promise<QueueEvents> {
  const events = new QueueEvents(queue.name, { connection, prefix: queue.prefix });
  const finished = ({ jobId }: { jobId: string }) => {
    const job = pagesOfJobId(jobId);
    if (job !== undefined) onPages(job.docId, job.lastPage - job.firstPage + 1);
  };
  events.on('completed', finished);
  events.on('failed', finished);
  try {
    await events.waitUntilReady();
  } catch (error) {
    await events.close();
    throw error;
  }
  return events;
}
