// What `scriptorium status` shows, read from Redis: jobs per state of every queue, work completed in
// a recent window and work left (pages per kind of page, since kinds differ in speed many times
// over), the pages flagged in that window, the live workers, the latest failed jobs, and each API
// key's usage of its quotas.
import { Queue } from 'bullmq';

import type { Variant } from '../vocabulary/ocr-vocabulary.js';
import { parsePageJobData } from '../jobs/job-types.js';
import type { PageFlag } from '../jobs/page-flags.js';
import { pagesOfJobId } from './job-ids.js';
import { KeyQuotas, type KeyQuota, type KeyUsage } from './key-quotas.js';
import { listLiveWorkers, type LiveWorker } from './live-workers.js';
import { DOCUMENTS, jobKey, PAGE_QUEUES, pageQueue, type QueueName } from './queue-names.js';
import { connectRedis, type RedisClient, redisOptions } from './redis.js';
import { countedKinds, pageKind, recentFlagged, recentThroughput } from './throughput.js';
import { UNFINISHED_DOCUMENT_STATES, UNFINISHED_PAGE_STATES, type WorkLeft } from './work-left.js';

export const JOB_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'waiting-children', 'completed', 'failed', 'paused'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** Job ids (and job data) read per round trip. */
const CHUNK = 10_000;

export interface QueueCounts {
  queue: QueueName;
  /** Workers connected to the queue (BullMQ's count of worker connections). */
  workers: number;
  counts: Record<JobState, number>;
}

/** One line of work: completed in the window, the rate, and what is left. */
export interface WorkRate extends WorkLeft {
  /** 'documents', or a kind of page ('v1-markdown-gundam'). */
  kind: string;
  completed: number;
}

export interface FailedJob {
  name: string;
  id: string;
  attemptsMade: number;
  finishedOn?: number;
  failedReason: string;
}

export interface QueueStatus {
  queues: QueueCounts[];
  documents: WorkRate;
  /** One per kind of page completed in the last hour or still left, in kind order. */
  pages: WorkRate[];
  /** Pages stored with each flag in the window (a page with two flags counts under both). */
  flagged: Record<PageFlag, number>;
  liveWorkers: LiveWorker[];
  failed: { queue: QueueName; jobs: FailedJob[] }[];
  /** The API keys the last `serve` started recorded, by name, with their quotas and usage. */
  apiKeys: { name: string; quota: KeyQuota; usage: KeyUsage }[];
}

export interface QueueStatusOptions {
  /** Minutes of the completion window (1 to MAX_WINDOW_MINUTES). */
  windowMinutes: number;
  /** Latest failed jobs listed per queue. */
  failedShown: number;
  now?: number;
}

export async function readQueueStatus(redisUrl: string, options: QueueStatusOptions): Promise<QueueStatus> {
  const now = options.now ?? Date.now();
  const client = connectRedis(redisOptions(redisUrl, 'client'));
  const opened = [DOCUMENTS, ...PAGE_QUEUES].map((queue) => ({ queue, bull: new Queue(queue.name, { connection: redisOptions(redisUrl, 'client'), prefix: queue.prefix }) }));
  const [{ bull: documents }, ...pageQueues] = opened;
  try {
    const queues = await Promise.all(
      opened.map(async ({ queue, bull }): Promise<QueueCounts> => {
        const [counts, workers] = await Promise.all([bull.getJobCounts(...JOB_STATES), bull.getWorkersCount()]);
        return { queue, workers, counts: Object.fromEntries(JOB_STATES.map((state) => [state, counts[state] ?? 0])) as Record<JobState, number> };
      }),
    );

    const documentsLeft = sumOf(await documents.getJobCounts(...UNFINISHED_DOCUMENT_STATES));
    const documentRate = await recentThroughput(client, { queue: DOCUMENTS }, options.windowMinutes, now);
    // A kind names its variant, so kinds never repeat across the variants' page queues.
    const pageRates = (
      await Promise.all(
        pageQueues.map(async ({ queue, bull }) => {
          const pagesLeft = await unfinishedPagesByKind(client, queue, bull);
          const kinds = [...new Set([...(await countedKinds(client, queue)), ...pagesLeft.keys()])];
          return Promise.all(
            kinds.map(async (kind): Promise<WorkRate> => {
              const rate = await recentThroughput(client, { queue, kind }, options.windowMinutes, now);
              return { kind, ...rate, left: pagesLeft.get(kind) ?? 0 };
            }),
          );
        }),
      )
    )
      .flat()
      .sort((a, b) => a.kind.localeCompare(b.kind));

    const failed = [];
    if (options.failedShown > 0) {
      for (const { queue, bull } of opened) {
        const jobs = (await bull.getFailed(0, options.failedShown - 1)).map(
          (job): FailedJob => ({ name: job.name, id: job.id ?? '', attemptsMade: job.attemptsMade, finishedOn: job.finishedOn, failedReason: job.failedReason }),
        );
        failed.push({ queue, jobs });
      }
    }
    return {
      queues,
      documents: { kind: 'documents', ...documentRate, left: documentsLeft },
      pages: pageRates.filter((rate) => rate.completed > 0 || rate.left > 0),
      flagged: await recentFlagged(client, options.windowMinutes, now),
      liveWorkers: await listLiveWorkers(client),
      failed,
      apiKeys: await new KeyQuotas(client).recordedUsage(now),
    };
  } finally {
    await Promise.all(opened.map(({ bull }) => bull.close()));
    client.disconnect();
  }
}

/** Documents queued and not yet assembled. */
export async function unfinishedDocumentCount(redisUrl: string): Promise<number> {
  const documents = new Queue(DOCUMENTS.name, { connection: redisOptions(redisUrl, 'client'), prefix: DOCUMENTS.prefix });
  try {
    return sumOf(await documents.getJobCounts(...UNFINISHED_DOCUMENT_STATES));
  } finally {
    await documents.close();
  }
}

/** Workers connected to `variant`'s page queue now. */
export async function connectedPageWorkers(redisUrl: string, variant: Variant): Promise<number> {
  const queue = pageQueue(variant);
  const pages = new Queue(queue.name, { connection: redisOptions(redisUrl, 'client'), prefix: queue.prefix });
  try {
    return await pages.getWorkersCount();
  } finally {
    await pages.close();
  }
}

function sumOf(counts: Record<string, number>): number {
  return Object.values(counts).reduce((sum, count) => sum + count, 0);
}

/**
 * Unfinished pages per kind of page: pages, not jobs (a V3 page-group job covers several pages, which
 * its id names, '<docId>.p1-12'), the kind from each job's options. Read in chunks; jobs that change
 * state meanwhile may be counted twice or missed, and a job whose data cannot be read counts as 'unknown'.
 */
async function unfinishedPagesByKind(client: RedisClient, queue: QueueName, pages: Queue): Promise<Map<string, number>> {
  const ids = new Set<string>();
  for (let start = 0; ; start += CHUNK) {
    const chunk = await pages.getRanges([...UNFINISHED_PAGE_STATES], start, start + CHUNK - 1);
    if (chunk.length === 0) break;
    for (const id of chunk) ids.add(id);
  }
  const byKind = new Map<string, number>();
  const all = [...ids];
  for (let start = 0; start < all.length; start += CHUNK) {
    const chunk = all.slice(start, start + CHUNK);
    const pipeline = client.pipeline();
    for (const id of chunk) pipeline.hget(jobKey(queue, id), 'data');
    const data = (await pipeline.exec()) ?? [];
    chunk.forEach((id, i) => {
      const range = pagesOfJobId(id);
      const count = range === undefined ? 1 : range.lastPage - range.firstPage + 1;
      const kind = kindOfJobData(data[i]?.[1]);
      byKind.set(kind, (byKind.get(kind) ?? 0) + count);
    });
  }
  return byKind;
}

function kindOfJobData(data: unknown): string {
  try {
    return pageKind(parsePageJobData(JSON.parse(String(data))).options);
  } catch {
    return 'unknown';
  }
}
