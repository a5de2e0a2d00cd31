// `scriptorium work`: a worker process: loads one model, takes page jobs from Redis in batches and
// assembles finished documents, until SIGTERM or SIGINT (then it finishes the jobs it holds).
import { VARIANTS, type Variant } from '../engine/model-config.js';
import { commandLogger } from './cli-logger.js';
import { resolveModelDir } from './default-model.js';
import { startOcrWorkers } from './ocr-workers.js';
import { openQueueRedis } from './queue-redis.js';
import { onShutdownSignal } from './shutdown-signals.js';
import { openCommandStorage, STORAGE_URL_USAGE } from './storage-url.js';
import { choiceOption, integerOption, parseCommandArgs, UsageError } from './usage.js';

const USAGE = `Usage: scriptorium work [--model DIR] [--variant v1|v2|v3] [--storage URL] [--batch N] [--concurrency N] [--threads T]

Takes page jobs from Redis ($REDIS_URL, default redis://127.0.0.1:6379), reads them with the model
and writes results/<docId>/pages/* to the storage; assembles each document once all its pages have
settled. Runs until SIGTERM or SIGINT, then finishes the jobs it holds and exits (a second signal
exits at once; its jobs are then retried elsewhere). Logs are JSON lines on stderr ($LOG_LEVEL, default info).

  --model DIR       checkpoint (default $SCRIPTORIUM_MODEL, else the synthetic tiny V3 checkpoint);
                    jobs enqueued for another variant fail on this worker
  --variant V       overrides the variant detected from config.json
  --storage URL     ${STORAGE_URL_USAGE}; the producer's storage
  --batch N         page jobs per batched decode (default 4)
  --concurrency N   page jobs held at once (default 2 × batch, so the next batch waits ready)
  --threads T       engine threads (default: one per CPU)`;

export async function runWorkCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    args,
    {
      model: { type: 'string' },
      variant: { type: 'string' },
      storage: { type: 'string' },
      batch: { type: 'string' },
      concurrency: { type: 'string' },
      threads: { type: 'string' },
    },
    USAGE,
  );
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`, USAGE);
  const variant = values.variant === undefined ? undefined : choiceOption<Variant>(values.variant, 'variant', VARIANTS, USAGE);
  const batch = integerOption(values.batch, 'batch', 4, USAGE, 1);
  const concurrency = integerOption(values.concurrency, 'concurrency', 2 * batch, USAGE, 1);
  const threads = values.threads === undefined ? undefined : integerOption(values.threads, 'threads', 1, USAGE, 1);
  const storage = openCommandStorage(values.storage);
  const logger = commandLogger('info');

  const redis = await openQueueRedis();
  try {
    const model = await resolveModelDir(values.model);
    const workers = await startOcrWorkers({ model, variant, threads, storage, redisUrl: redis.url, batch, concurrency, logger });
    logger.info({ redis: redis.description, batch, concurrency }, 'taking jobs');
    await new Promise<void>((resolve, reject) => {
      onShutdownSignal((signal) => {
        logger.info({ signal }, 'stopping: finishing claimed jobs');
        workers.close().then(resolve, reject);
      });
    });
    logger.info('stopped');
    return 0;
  } finally {
    await redis.close();
  }
}
