// The BullMQ worker of the documents queue. BullMQ hands it a document's parent job only once every
// page job has settled: completed children's return values and failed children's last reasons
// (kept by the flow's ignoreDependencyOnFailure) become the page statuses the assembler writes
// document.md, document.json and _DONE from.
import { Worker, type Job, type Telemetry } from 'bullmq';
import type { Logger } from 'pino';

import { parseDocumentJobData, parseDonePageOutcome, type DocumentJobData, type DocumentOutcome } from '../jobs/job-types.js';
import { documentResultKeys } from '../jobs/storage-layout.js';
import { checkedJobData } from '../queue/job-data-check.js';
import { pagesOfJobId } from '../queue/job-ids.js';
import { DOCUMENTS, pageJobIdOfKey } from '../queue/queue-names.js';
import { leaveForeignStorageJob } from '../queue/storage-affinity.js';
import type { Storage } from '../storage/storage.js';
import { assembleDocument, type PageStatus } from './document-assembler.js';
import type { RedisConnectionOptions } from '../queue/redis.js';

/** BullMQ's reason for a job whose worker died more often than the page worker's maxStalledCount allows. */
const BULLMQ_STALLED_REASON = 'job stalled more than allowable limit';

/** What document.json says of such a page instead. */
export const STALLED_PAGE_REASON =
  'every worker that read this page died before finishing it (crashed or was killed), so it was given up: the page may crash the engine';

export interface DocumentWorkerOptions {
  storage: Storage;
  /** Options for a `worker` connection (see redisOptions). */
  connection: RedisConnectionOptions;
  logger: Logger;
  /** Documents assembled at once (storage reads and writes only). Default 4. */
  concurrency?: number;
  /** As for the page worker: how long a dead worker's document jobs wait before another takes them over. Default 30 s. */
  lockDurationMs?: number;
  /** How often this worker looks for document jobs whose worker died. Default 30 s. */
  stalledIntervalMs?: number;
  /** BullMQ telemetry (queue/tracing.ts): each assembly a span of its document's trace. Default: none. */
  telemetry?: Telemetry;
}

export function startDocumentWorker(options: DocumentWorkerOptions): Worker<DocumentJobData, DocumentOutcome> {
  const { storage, connection, logger } = options;
  const worker = new Worker<DocumentJobData, DocumentOutcome>(
    DOCUMENTS.name,
    async (job: Job<DocumentJobData>, token?: string) => {
      const data = checkedJobData(parseDocumentJobData, job.data);
      await leaveForeignStorageJob(job, token, data.storage, storage.url, logger);
      // Named by the job's id and creation time: a job queued again (reconcile, retry) has a new time.
      const document = await assembleDocument(data, await pageStatusesOf(job), storage, `${job.id}@${job.timestamp}`);
      const keys = documentResultKeys(data.docId);
      const outcome: DocumentOutcome = {
        docId: data.docId,
        markdown: keys.markdown,
        json: keys.json,
        pages: data.pageCount,
        failedPages: document.failedPages,
        flagged: document.flagged,
        ...(data.damage === undefined ? {} : { damage: data.damage }),
      };
      logger.info({ docId: outcome.docId, pages: outcome.pages, failedPages: outcome.failedPages.length, flaggedPages: document.flagged?.length }, 'document done');
      return outcome;
    },
    {
      connection,
      prefix: DOCUMENTS.prefix,
      concurrency: options.concurrency ?? 4,
      lockDuration: options.lockDurationMs ?? 30_000,
      stalledInterval: options.stalledIntervalMs ?? 30_000,
      telemetry: options.telemetry,
    },
  );
  worker.on('error', (error) => logger.error({ err: error }, 'document worker: queue error'));
  return worker;
}

/** Done pages from the children's return values, failed pages from their ignored failures. */
export async function pageStatusesOf(job: Job<DocumentJobData>): Promise<PageStatus[]> {
  const [values, failures] = await Promise.all([job.getChildrenValues(), job.getIgnoredChildrenFailures()]);
  const done = Object.values(values).flatMap((value) =>
    parseDonePageOutcome(value).pages.map(
      (stored): PageStatus => ({ page: stored.page, status: 'done', key: stored.key, ...(stored.flags === undefined ? {} : { flags: stored.flags }), stored }),
    ),
  );
  const failed = Object.entries(failures).flatMap(([key, bullmqReason]) => {
    const reason = bullmqReason === BULLMQ_STALLED_REASON ? STALLED_PAGE_REASON : bullmqReason;
    const pages = pagesOfJobId(pageJobIdOfKey(key) ?? '');
    if (pages === undefined) throw new Error(`document ${job.data.docId}: a failed child ${key} is not a page job of a page queue`);
    return Array.from({ length: pages.lastPage - pages.firstPage + 1 }, (_, i): PageStatus => ({ page: pages.firstPage + i, status: 'failed', reason }));
  });
  return [...done, ...failed];
}
