// `scriptorium status`: prints what src/queue/queue-status.ts reads from Redis: jobs per state, what
// each kind of work completed lately and when it should be through, the pages flagged lately, the
// live workers, the latest failed jobs with their reasons, and each API key's usage of its quotas.
import { PAGE_FLAGS } from '../jobs/page-flags.js';
import type { LiveWorker } from '../queue/live-workers.js';
import { DOCUMENTS, fullQueueName, PAGE_QUEUES } from '../queue/queue-names.js';
import { JOB_STATES, readQueueStatus, type QueueStatus, type WorkRate } from '../queue/queue-status.js';
import { MAX_WINDOW_MINUTES } from '../queue/throughput.js';
import { timeLeft } from '../queue/work-left.js';
import { openQueueRedis } from './queue-redis.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { duration, integer } from './options.js';

const USAGE = `Usage: scriptorium status [--failed N] [--window M]

Job counts per state of ${fullQueueName(DOCUMENTS)} and of each variant's page queue
(${PAGE_QUEUES.map(fullQueueName).join(', ')}) in Redis ($REDIS_URL, default redis://127.0.0.1:6379)
and the number of workers connected to each; for documents and for
each kind of page (variant-task-mode: kinds differ in speed many times over), what was completed in the
last M minutes (--window: 10, 10m or 1h; default 10, at most ${MAX_WINDOW_MINUTES}), the rate, and at that rate the time left
for the work still queued or running ("no live workers" while none is alive); the pages flagged in
those minutes, per flag (max_tokens, timeout, repetition, empty: read, but worth a look, see
\`scriptorium retry --flagged\`); the live workers (host, backend, the jobs they hold, pages done and
failed, how long since their last heartbeat); the latest failed jobs with their reasons (--failed N,
default 20; 0 for none); and for each API key of \`scriptorium serve\`, by name, its priority class,
the pages it submitted this UTC day and the documents it has in flight, beside its quotas. A failed
page job is kept in its document as a failed page; a failed document job is tried again by
enqueueing its input again.`;

const MINUTE = 60_000;

const OPTIONS = {
  failed: integer({ min: 0 }).default(20),
  window: duration({ unit: 'm', min: MINUTE, max: MAX_WINDOW_MINUTES * MINUTE }).default(10 * MINUTE),
};

export const statusCommand = defineCommand({ usage: USAGE, options: OPTIONS, run: runStatus });

async function runStatus({ options }: CommandLine<typeof OPTIONS>): Promise<number> {
  const failedShown = options.failed;
  const windowMinutes = options.window / MINUTE;

  const redis = await openQueueRedis();
  try {
    const now = Date.now();
    const status = await readQueueStatus(redis.url, { windowMinutes, failedShown, now });
    process.stdout.write(`${statusLines(status, redis.description, windowMinutes, now).join('\n')}\n`);
    return 0;
  } finally {
    await redis.close();
  }
}

/** The rate row of all page queues together; a row per kind of page follows it. */
const PAGES_ROW = 'pages (all variants)';

export function statusLines(status: QueueStatus, redisDescription: string, windowMinutes: number, now: number): string[] {
  const lines = [
    `Redis ${redisDescription}`,
    ...table(
      ['queue', 'workers', ...JOB_STATES],
      status.queues.map(({ queue, workers, counts }) => [fullQueueName(queue), String(workers), ...JOB_STATES.map((state) => String(counts[state]))]),
    ),
  ];

  const alive = status.liveWorkers.length > 0;
  const rateRow = (label: string, unit: string, rate: WorkRate) => [
    label,
    `${rate.completed} ${unit}`,
    rate.perMinute.toFixed(1),
    `${rate.left} ${unit}`,
    etaText([rate], alive),
  ];
  const rows = [rateRow(fullQueueName(DOCUMENTS), 'documents', status.documents)];
  if (status.pages.length > 0) {
    const total = status.pages.reduce((sum, rate) => ({ ...sum, completed: sum.completed + rate.completed, perMinute: sum.perMinute + rate.perMinute, left: sum.left + rate.left }));
    rows.push([...rateRow(PAGES_ROW, 'pages', total).slice(0, 4), etaText(status.pages, alive)]);
    if (status.pages.length > 1 || status.pages[0].kind === 'unknown') rows.push(...status.pages.map((rate) => rateRow(`  ${rate.kind}`, 'pages', rate)));
  } else {
    rows.push(rateRow(PAGES_ROW, 'pages', { kind: 'pages', completed: 0, perMinute: 0, left: 0 }));
  }
  lines.push('', ...table(['queue', `done in ${windowMinutes} min`, 'per min', 'left', 'ETA'], rows));
  lines.push('', flaggedLine(status.flagged, windowMinutes));

  lines.push('');
  if (alive) {
    lines.push(...table(['live worker', 'backend', 'variant', 'current jobs', 'pages done', 'failed', 'heartbeat'], status.liveWorkers.map((worker) => workerRow(worker, now))));
  } else {
    lines.push('no live workers (start one with `scriptorium work`)');
  }

  if (status.apiKeys.length > 0) {
    const limit = (value: number | undefined) => (value === undefined ? '-' : String(value));
    lines.push(
      '',
      ...table(
        ['API key', 'class', 'pages today', 'per day', 'in flight', 'limit'],
        status.apiKeys.map(({ name, quota, usage }) => [
          name,
          quota.priorityClass,
          String(usage.pagesToday),
          limit(quota.pagesPerDay),
          String(usage.documentsInFlight),
          limit(quota.documentsInFlight),
        ]),
      ),
    );
  }

  for (const { queue, jobs } of status.failed) {
    if (jobs.length === 0) continue;
    lines.push('', `latest failed jobs of ${fullQueueName(queue)}:`);
    for (const job of jobs) {
      const when = job.finishedOn === undefined ? '' : ` at ${new Date(job.finishedOn).toISOString()}`;
      lines.push(`  ${job.name} (id ${job.id}), ${job.attemptsMade} tr${job.attemptsMade === 1 ? 'y' : 'ies'}${when}: ${job.failedReason}`);
    }
  }
  return lines;
}

/** The pages flagged in the window, per flag. */
function flaggedLine(flagged: QueueStatus['flagged'], windowMinutes: number): string {
  const counts = PAGE_FLAGS.filter((flag) => flagged[flag] > 0).map((flag) => `${flagged[flag]} ${flag}`);
  return `pages flagged in ${windowMinutes} min: ${counts.length === 0 ? 'none' : counts.join(', ')}`;
}

/** The ETA column: the time left by the rule of work-left.ts, or why there is none. */
function etaText(rates: readonly WorkRate[], alive: boolean): string {
  const eta = timeLeft(rates, alive);
  if (eta.state === 'nothing-left') return 'nothing left';
  if (eta.state === 'no-live-workers') return 'no live workers';
  if (eta.state === 'no-rate') return 'unknown (nothing of this kind completed in the window)';
  const minutes = Math.ceil(eta.minutes);
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
