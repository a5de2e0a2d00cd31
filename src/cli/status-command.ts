// `scriptorium status`: how many jobs each queue holds per state, how fast each queue has been
// completing work lately and when it should be through, which workers are alive and what they are
// doing, and the latest failed jobs with their reasons.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';

import { pagesOfJobId } from '../queue/job-ids.js';
import { listLiveWorkers, type LiveWorker } from '../queue/live-workers.js';
import { DOCUMENTS, fullQueueName, PAGE_QUEUES } from '../queue/queue-names.js';
import { redisOptions } from '../queue/redis.js';
import { MAX_WINDOW_MINUTES, recentThroughput } from '../queue/throughput.js';
import { openQueueRedis } from './queue-redis.js';
import { integerOption, parseCommandArgs, UsageError } from './usage.js';

const USAGE = `Usage: scriptorium status [--failed N] [--window M]

Job counts per state of ${fullQueueName(DOCUMENTS)} and of each variant's page queue
(${PAGE_QUEUES.map(fullQueueName).join(', ')}) in Redis ($REDIS_URL, default redis://127.0.0.1:6379)
and the number of workers connected to each; per queue, what was
completed in the last M minutes (--window, default 10, at most ${MAX_WINDOW_MINUTES}), the rate, and at that rate
the time left for the work still queued or running; the live workers (host, backend, the jobs they
hold, pages done and failed, how long since their last heartbeat); and the latest failed jobs with
their reasons (--failed N, default 20; 0 for none). A failed page job is kept in its document as a
failed page; a failed document job is tried again by enqueueing its input again.`;

const STATES = ['waiting', 'prioritized', 'active', 'delayed', 'waiting-children', 'completed', 'failed', 'paused'] as const;
/** Work not yet finished: what the ETA is for. */
const UNFINISHED_PAGE_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'paused'] as const;
const UNFINISHED_DOCUMENT_STATES = [...UNFINISHED_PAGE_STATES, 'waiting-children'] as const;

export async function runStatusCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, { failed: { type: 'string' }, window: { type: 'string' } }, USAGE);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`, USAGE);
  const failedShown = integerOption(values.failed, 'failed', 20, USAGE, 0);
  const windowMinutes = integerOption(values.window, 'window', 10, USAGE, 1);
  if (windowMinutes > MAX_WINDOW_MINUTES) throw new UsageError(`--window must be at most ${MAX_WINDOW_MINUTES} minutes (got ${windowMinutes})`, USAGE);

  const redis = await openQueueRedis();
  const client = new Redis(redisOptions(redis.url, 'client'));
  const queues = [DOCUMENTS, ...PAGE_QUEUES].map((name) => ({ name, queue: new Queue(name.name, { connection: redisOptions(redis.url, 'client'), prefix: name.prefix }) }));
  try {
    const now = Date.now();
    const rows = await Promise.all(
      queues.map(async ({ name, queue }) => {
        const [counts, workers] = await Promise.all([queue.getJobCounts(...STATES), queue.getWorkersCount()]);
        return [fullQueueName(name), String(workers), ...STATES.map((state) => String(counts[state] ?? 0))];
      }),
    );
    const lines = [`Redis ${redis.description}`, ...table(['queue', 'workers', ...STATES], rows)];

    const [documents, ...pageQueues] = queues;
    const unfinished = await Promise.all([
      unfinishedDocuments(documents.queue).then((left) => ({ name: documents.name, unit: 'documents', left })),
      ...pageQueues.map(({ name, queue }) => unfinishedPages(queue).then((left) => ({ name, unit: 'pages', left }))),
    ]);
    const throughputRows = await Promise.all(
      unfinished.map(async ({ name, unit, left }) => {
        const { completed, perMinute } = await recentThroughput(client, name, windowMinutes, now);
        return [fullQueueName(name), `${completed} ${unit}`, perMinute.toFixed(1), `${left} ${unit}`, eta(left, perMinute)];
      }),
    );
    lines.push('', ...table(['queue', `done in ${windowMinutes} min`, 'per min', 'left', 'ETA'], throughputRows));

    const workers = await listLiveWorkers(client);
    lines.push('');
    if (workers.length === 0) {
      lines.push('no live workers (start one with `scriptorium work`)');
    } else {
      lines.push(...table(['live worker', 'backend', 'variant', 'current jobs', 'pages done', 'failed', 'heartbeat'], workers.map((worker) => workerRow(worker, now))));
    }

    if (failedShown > 0) {
      for (const { name, queue } of queues) {
        const failed = await queue.getFailed(0, failedShown - 1);
        if (failed.length === 0) continue;
        lines.push('', `latest failed jobs of ${fullQueueName(name)}:`);
        for (const job of failed) {
          const when = job.finishedOn === undefined ? '' : ` at ${new Date(job.finishedOn).toISOString()}`;
          lines.push(`  ${job.name} (id ${job.id}), ${job.attemptsMade} tr${job.attemptsMade === 1 ? 'y' : 'ies'}${when}: ${job.failedReason}`);
        }
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  } finally {
    await Promise.all(queues.map(({ queue }) => queue.close()));
    client.disconnect();
    await redis.close();
  }
}

async function unfinishedDocuments(documents: Queue): Promise<number> {
  const counts = await documents.getJobCounts(...UNFINISHED_DOCUMENT_STATES);
  return UNFINISHED_DOCUMENT_STATES.reduce((sum, state) => sum + (counts[state] ?? 0), 0);
}

/** Job ids read per state and round trip. */
const ID_CHUNK = 10_000;

/**
 * Pages, not jobs: a V3 page-group job covers several pages, which its id names ('<docId>.p1-12').
 * The ids are read in chunks; jobs that change state meanwhile may be counted twice or missed.
 */
async function unfinishedPages(pages: Queue): Promise<number> {
  const ids = new Set<string>();
  for (let start = 0; ; start += ID_CHUNK) {
    const chunk = await pages.getRanges([...UNFINISHED_PAGE_STATES], start, start + ID_CHUNK - 1);
    if (chunk.length === 0) break;
    for (const id of chunk) ids.add(id);
  }
  let count = 0;
  for (const id of ids) {
    const range = pagesOfJobId(id);
    count += range === undefined ? 1 : range.lastPage - range.firstPage + 1;
  }
  return count;
}

/** Time to finish `left` items at `perMinute`. */
function eta(left: number, perMinute: number): string {
  if (left === 0) return 'nothing left';
  if (perMinute === 0) return 'unknown (nothing completed in the window)';
  const minutes = Math.ceil(left / perMinute);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

function workerRow(worker: LiveWorker, now: number): string[] {
  const [first, ...more] = worker.currentJobs;
  const current = first === undefined ? 'idle' : more.length === 0 ? first : `${first} (+${more.length})`;
  const age = Math.max(0, Math.round((now - worker.lastHeartbeat) / 1000));
  return [
    `${worker.host} pid ${worker.pid}`,
    `${worker.backend} ×${worker.threads}`,
    worker.variant,
    current,
    String(worker.pagesDone),
    String(worker.pagesFailed),
    `${age} s ago`,
  ];
}

/** Columns right-aligned except the first. */
function table(header: readonly string[], rows: readonly string[][]): string[] {
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => row[column].length)));
  const line = (cells: readonly string[]) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[0]) : cell.padStart(widths[column]))).join('  ');
  return [line(header), ...rows.map(line)];
}
