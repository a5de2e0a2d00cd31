// `scriptorium status`: how many jobs each queue holds per state, how many workers listen, and the
// latest failed jobs with their reasons.
import { Queue } from 'bullmq';

import { DOCUMENTS, PAGES, type QueueName } from '../queue/queue-names.js';
import { redisOptions } from '../queue/redis.js';
import { openQueueRedis } from './queue-redis.js';
import { integerOption, parseCommandArgs, UsageError } from './usage.js';

const USAGE = `Usage: scriptorium status [--failed N]

Job counts per state of ${DOCUMENTS.prefix}:${DOCUMENTS.name} and ${PAGES.prefix}:${PAGES.name} in Redis
($REDIS_URL, default redis://127.0.0.1:6379), the number of connected workers, and the latest
failed jobs with their reasons (--failed N, default 20; 0 for none). A failed page job is kept in its
document as a failed page; a failed document job is tried again by enqueueing its input again.`;

const STATES = ['waiting', 'prioritized', 'active', 'delayed', 'waiting-children', 'completed', 'failed', 'paused'] as const;

export async function runStatusCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, { failed: { type: 'string' } }, USAGE);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`, USAGE);
  const failedShown = integerOption(values.failed, 'failed', 20, USAGE, 0);

  const redis = await openQueueRedis();
  const queues = [DOCUMENTS, PAGES].map((name) => ({ name, queue: new Queue(name.name, { connection: redisOptions(redis.url, 'client'), prefix: name.prefix }) }));
  try {
    const rows = await Promise.all(
      queues.map(async ({ name, queue }) => {
        const [counts, workers] = await Promise.all([queue.getJobCounts(...STATES), queue.getWorkersCount()]);
        return [fullName(name), String(workers), ...STATES.map((state) => String(counts[state] ?? 0))];
      }),
    );
    const lines = [`Redis ${redis.description}`, ...table(['queue', 'workers', ...STATES], rows)];
    if (failedShown > 0) {
      for (const { name, queue } of queues) {
        const failed = await queue.getFailed(0, failedShown - 1);
        if (failed.length === 0) continue;
        lines.push('', `latest failed jobs of ${fullName(name)}:`);
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
    await redis.close();
  }
}

function fullName(name: QueueName): string {
  return `${name.prefix}:${name.name}`;
}

/** Columns right-aligned except the first. */
function table(header: readonly string[], rows: readonly string[][]): string[] {
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => row[column].length)));
  const line = (cells: readonly string[]) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[0]) : cell.padStart(widths[column]))).join('  ');
  return [line(header), ...rows.map(line)];
}
