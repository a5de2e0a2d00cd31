// `scriptorium enqueue`: stage input documents in storage and add their jobs to the queue, for
// workers (`scriptorium work`) anywhere that share the Redis and the storage.
import { Queue } from 'bullmq';

import { loadModelConfig, VARIANTS, type Variant } from '../engine/model-config.js';
import { PAGES } from '../queue/queue-names.js';
import { redisOptions } from '../queue/redis.js';
import { resolveModelDir } from './default-model.js';
import { enqueueAndFollow } from './enqueue-and-follow.js';
import { OCR_JOB_ARGS, OCR_JOB_ARGS_USAGE, ocrJobOptionsOf, PRIORITY_USAGE, priorityOf } from './ocr-job-args.js';
import { openQueueRedis } from './queue-redis.js';
import { openCommandStorage, STORAGE_URL_USAGE } from './storage-url.js';
import { choiceOption, integerOption, parseCommandArgs, UsageError } from './usage.js';

const USAGE = `Usage: scriptorium enqueue INPUT... [--to URL] [--model DIR | --variant v1|v2|v3] [--task T] [--mode M]
                          [--dpi N] [--max-tokens N] [--priority N] [--attempts N] [--wait]

INPUT is a PDF or image file, a directory (recursively), a zip or tar(.gz) archive, or s3://bucket/prefix.
Each document's source is staged once in the storage and one job per page is added to Redis
($REDIS_URL, default redis://127.0.0.1:6379). The same input with the same options is a no-op:
finished documents (results/<docId>/_DONE) and documents still queued are not added again.

  --to URL          storage for sources and results: ${STORAGE_URL_USAGE};
                    workers must use the same one
  --model DIR       the checkpoint workers will run, to take its variant (default $SCRIPTORIUM_MODEL,
                    else the synthetic tiny V3 checkpoint); --variant names it instead
${OCR_JOB_ARGS_USAGE}
${PRIORITY_USAGE}
  --attempts N      tries per page before it is recorded as failed (default 3)
  --wait            follow the documents until each is assembled, printing where its results are

Inputs that are no usable document are reported with their reason and nothing is queued for them.
Exit status: 0, or 3 when an input was rejected (with --wait: or a page or document failed).`;

export async function runEnqueueCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    args,
    {
      to: { type: 'string' },
      model: { type: 'string' },
      variant: { type: 'string' },
      attempts: { type: 'string' },
      wait: { type: 'boolean', default: false },
      priority: { type: 'string' },
      ...OCR_JOB_ARGS,
    },
    USAGE,
  );
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError('give at least one INPUT', USAGE);
  if (values.model !== undefined && values.variant !== undefined) throw new UsageError('give --model or --variant, not both', USAGE);
  const variant = values.variant === undefined ? await variantOfModel(values.model) : choiceOption<Variant>(values.variant, 'variant', VARIANTS, USAGE);
  const ocr = ocrJobOptionsOf(values, variant, USAGE);
  const priority = priorityOf(values.priority, USAGE);
  const attempts = integerOption(values.attempts, 'attempts', 3, USAGE, 1);
  const storage = openCommandStorage(values.to);

  const redis = await openQueueRedis();
  try {
    return await enqueueAndFollow({
      inputs: positionals,
      enqueue: { ocr, storage, priority, attempts },
      redisUrl: redis.url,
      wait: values.wait,
      beforeWaiting: () => warnWithoutWorkers(redis.url),
    });
  } finally {
    await redis.close();
  }
}

async function variantOfModel(modelFlag: string | undefined): Promise<Variant> {
  const model = await resolveModelDir(modelFlag);
  return (await loadModelConfig(model.dir)).variant;
}

/** Waiting with no worker would look like a hang. */
async function warnWithoutWorkers(redisUrl: string): Promise<void> {
  const pages = new Queue(PAGES.name, { connection: redisOptions(redisUrl, 'client'), prefix: PAGES.prefix });
  try {
    if ((await pages.getWorkersCount()) === 0) {
      process.stderr.write(`scriptorium: no worker is connected to ${PAGES.prefix}:${PAGES.name}: start \`scriptorium work\` to process the documents (Ctrl-C stops waiting; the jobs stay queued)\n`);
    }
  } finally {
    await pages.close();
  }
}
