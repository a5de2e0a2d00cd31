// `scriptorium enqueue`: stage input documents in storage and add their jobs to the queue, for
// workers (`scriptorium work`) anywhere that share the Redis and the storage.
import type { Variant } from '../vocabulary/ocr-vocabulary.js';
import { fullQueueName, pageQueue } from '../queue/queue-names.js';
import { connectedPageWorkers } from '../queue/queue-status.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { ENQUEUE_ARGS_USAGE, ENQUEUE_OPTIONS, enqueueSettingsOf } from './enqueue-args.js';
import { enqueueAndFollow } from './enqueue-and-follow.js';
import { progressTerminal } from './enqueue-progress.js';
import { openQueueRedis } from './queue-redis.js';
import { flag } from './options.js';

const USAGE = `Usage: scriptorium enqueue INPUT... [--to URL] [--model DIR | --variant v1|v2|v3] [--task T] [--mode M]
                          [--dpi N | --longest-side PX] [--max-tokens N] [--password-env NAME | --password P]
                          [--priority N] [--attempts N] [--wait]

INPUT is a PDF or image file, a directory (recursively), a zip or tar(.gz) archive, or s3://bucket/prefix.
Each document's source is staged once in the storage and one job per page is added to Redis
($REDIS_URL, default redis://127.0.0.1:6379). The same input with the same options is a no-op:
finished documents (results/<docId>/_DONE) and documents still queued are not added again.

${ENQUEUE_ARGS_USAGE}
  --wait            follow the documents until each is assembled, printing where its results are
                    (with file:// storage, through links named after the inputs under by-input/)

Inputs that are no usable document are reported with their reason and nothing is queued for them.
When stderr is a terminal, a progress line shows the documents found and queued (with --wait, the
pages and documents finished); the lines on stdout stay the same.
Exit status: 0, or 3 when an input was rejected (with --wait: or a page or document failed).`;

const OPTIONS = { ...ENQUEUE_OPTIONS, wait: flag() };

export const enqueueCommand = defineCommand({ usage: USAGE, options: OPTIONS, positionals: { name: 'INPUT', min: 1 }, run: runEnqueue });

async function runEnqueue({ options: values, positionals }: CommandLine<typeof OPTIONS>): Promise<number> {
  const enqueue = await enqueueSettingsOf(values);

  const redis = await openQueueRedis();
  try {
    return await enqueueAndFollow({
      inputs: positionals,
      enqueue,
      redisUrl: redis.url,
      wait: values.wait,
      progress: progressTerminal(),
      beforeWaiting: () => warnWithoutWorkers(redis.url, enqueue.ocr.variant),
    });
  } finally {
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
