// `scriptorium enqueue`: stage input documents in storage and add their jobs to the queue, for
// workers (`scriptorium work`) anywhere that share the Redis and the storage, waiting for room in the
// queue before each document (or, with --no-wait, stopping where there is none).
import type { Variant } from '../vocabulary/ocr-vocabulary.js';
import { NoRoomError, QueueCapacity } from '../queue/queue-capacity.js';
import { fullQueueName, pageQueue } from '../queue/queue-names.js';
import { connectedPageWorkers } from '../queue/queue-status.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { EXIT_NO_ROOM } from './document-report.js';
import { ENQUEUE_ARGS_USAGE, ENQUEUE_OPTIONS, enqueueSettingsOf, MAX_QUEUED_PAGES_OPTION, MAX_QUEUED_PAGES_USAGE } from './enqueue-args.js';
import { enqueueAndFollow } from './enqueue-and-follow.js';
import { progressTerminal } from './enqueue-progress.js';
import { openQueueRedis } from './queue-redis.js';
import { flag } from './options.js';

const USAGE = `Usage: scriptorium enqueue INPUT... [--to URL] [--model DIR | --variant v1|v2|v3] [--task T] [--mode M]
                          [--dpi N | --longest-side PX] [--max-tokens N] [--password-env NAME | --password P]
                          [--priority N] [--attempts N] [--wait] [--max-queued-pages N] [--no-wait]

INPUT is a PDF or image file, a directory (recursively), a zip or tar(.gz) archive, or s3://bucket/prefix.
Each document's source is staged once in the storage and one job per page is added to Redis
($REDIS_URL, default redis://127.0.0.1:6379). The same input with the same options is a no-op:
finished documents (results/<docId>/_DONE) and documents still queued are not added again.

${ENQUEUE_ARGS_USAGE}
  --wait            follow the documents until each is assembled, printing where its results are
                    (with file:// storage, through links named after the inputs under by-input/)
${MAX_QUEUED_PAGES_USAGE}; before each document, enqueue waits until
                    there is room for it, saying so on stderr and on the progress line
  --no-wait         do not wait for room: stop at the first document without room (exit status 75);
                    the documents before it stay queued, and the same command again queues the rest

Inputs that are no usable document are reported with their reason and nothing is queued for them.
When stderr is a terminal, a progress line shows the documents found and queued (with --wait, the
pages and documents finished); the lines on stdout stay the same.
Exit status: 0, or 3 when an input was rejected (with --wait: or a page or document failed), or 75
when --no-wait found no room.`;

const OPTIONS = { ...ENQUEUE_OPTIONS, wait: flag(), 'max-queued-pages': MAX_QUEUED_PAGES_OPTION, 'no-wait': flag() };

export const enqueueCommand = defineCommand({ usage: USAGE, options: OPTIONS, positionals: { name: 'INPUT', min: 1 }, run: runEnqueue });

async function runEnqueue({ options: values, positionals }: CommandLine<typeof OPTIONS>): Promise<number> {
  const enqueue = await enqueueSettingsOf(values);

  const redis = await openQueueRedis();
  const capacity = new QueueCapacity(redis.url, values['max-queued-pages']);
  try {
    return await enqueueAndFollow({
      inputs: positionals,
      enqueue,
      redisUrl: redis.url,
      wait: values.wait,
      progress: progressTerminal(),
      beforeWaiting: () => warnWithoutWorkers(redis.url, enqueue.ocr.variant),
      room: { capacity, wait: !values['no-wait'] },
    });
  } catch (error) {
    if (!(error instanceof NoRoomError)) throw error;
    process.stderr.write(
      `scriptorium enqueue: ${error.message}. --no-wait stops here: the documents before it stay queued, and the same command again queues the rest (try again in about ${error.refusal.retryAfterSeconds} s)\n`,
    );
    return EXIT_NO_ROOM;
  } finally {
    await capacity.close();
    await redis.close();
  }
}

/** Waiting with no worker would look like a hang. */
async function warnWithoutWorkers(redisUrl: string, variant: Variant): Promise<void> {
  if ((await connectedPageWorkers(redisUrl, variant)) === 0) {
    process.stderr.write(
      `scriptorium: no ${variant} worker is connected to ${fullQueueName(pageQueue(variant))}: start \`scriptorium work\` with a ${variant} model to process the documents (Ctrl-C stops waiting; the jobs stay queued)\n`,
    );
  }
}
