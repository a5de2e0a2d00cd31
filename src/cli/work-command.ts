// `scriptorium work`: a worker process: loads one model, takes page jobs from Redis, decodes them together and
// assembles finished documents, until SIGTERM or SIGINT (then it finishes the jobs it holds), or
// until a recycle limit (--max-pages, --max-rss) has it stop the same way and exit for a fresh process.
import { VARIANTS } from '../vocabulary/ocr-vocabulary.js';
import {
  DEFAULT_HANG_GRACE_MS,
  DEFAULT_LOCK_DURATION_MS,
  DEFAULT_MAX_STALLED_COUNT,
  DEFAULT_PAGE_TIMEOUT_MS,
  DEFAULT_STALLED_INTERVAL_MS,
  MIN_SAFE_LOCK_DURATION_MS,
} from '../worker/page-worker.js';
import { serveMetrics, type MetricsServer } from '../worker/worker-metrics.js';
import { commandLogger } from './cli-logger.js';
import { checkpointIdentity } from '../model/checkpoint-identity.js';
import { resolveModelDir } from '../model/model-resolve.js';
import { EXIT_ENGINE_HUNG, startOcrWorkers } from '../worker/ocr-workers.js';
import { EXIT_WORKER_RECYCLED } from '../worker/worker-recycling.js';
import { openQueueRedis } from './queue-redis.js';
import { onShutdownSignal } from './shutdown-signals.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { COMMAND_DEFAULT_PRECISION } from '../engine/precision.js';
import { BATCH_OPTION, BATCH_USAGE, ENGINE_OPTIONS, engineChoices } from './engine-options.js';
import { openCommandStorage, STORAGE_URL_USAGE } from './storage-url.js';
import { byteSize, choice, duration, integer, port, text } from './options.js';
import { UsageError } from './usage.js';

const S = 1000;

const USAGE = `Usage: scriptorium work [--model DIR|s3://bucket/prefix/] [--model-cache DIR] [--variant v1|v2|v3] [--storage URL]
                       [--batch N|auto] [--concurrency N] [--threads T] [--device D] [--precision exact|fast] [--quantize none|int8] [--metrics-port P [--metrics-host H]]
                       [--page-timeout S] [--hang-grace S] [--lock-duration S] [--stalled-interval S] [--max-stalled N]
                       [--max-pages N] [--max-rss SIZE]

Takes page jobs from Redis ($REDIS_URL, default redis://127.0.0.1:6379), reads them with the model
and writes results/<docId>/pages/* to the storage; assembles each document once all its pages have
settled. Runs until SIGTERM or SIGINT, then finishes the jobs it holds and exits (a second signal
exits at once; its jobs are then retried elsewhere). Logs are JSON lines on stderr ($LOG_LEVEL, default info).
While it runs, \`scriptorium status\` lists it among the live workers.

  --model M           checkpoint folder, or s3://bucket/prefix/ holding the checkpoint files and a
                      SHA256SUMS of them (\`sha256sum * > SHA256SUMS\`), fetched and verified once into
                      the cache (default $SCRIPTORIUM_MODEL, else the synthetic tiny V3 checkpoint);
                      the worker takes page jobs of its variant's queue only ({scriptorium}:pages-v3)
  --model-cache DIR   where s3:// models are kept, as DIR/<bucket>/<prefix>/ (default ~/.cache/scriptorium/models)
  --variant V         overrides the variant detected from config.json
  --storage URL       ${STORAGE_URL_USAGE}; the producer's storage
${BATCH_USAGE}
  --concurrency N     page jobs held at once (default 2 × batch: the next pages are encoded, ready to join)
  --threads T         engine threads (default: one per CPU this process may use: its cgroup's CPU
                      limit, as a container's or pod's, when it is lower than the CPU count)
  --device D          where the decoder runs: cpu, gpu, gpu:N or auto (default cpu; see scriptorium devices)
  --precision P       activations of the CPU engine's products: exact or fast (default ${COMMAND_DEFAULT_PRECISION}; see docs/engine.md "Precision")
  --quantize Q        none|int8: int8 holds the experts and the vocabulary head in 8 bits, converted at
                      load (CPU decoder; default none; accuracy in docs/model.md)
  --metrics-port P    serve Prometheus metrics at http://H:P/metrics (pages done and failed, stage
                      times, generated tokens and decode time, queue depths, process metrics), and
                      /healthz (event loop responsive) and /readyz (model loaded, Redis reachable)
  --metrics-host H    the address to listen on (default 0.0.0.0: every interface)
  --page-timeout S    a page still decoding after S seconds stops, and fails with
                      "timed out" and are tried again (default ${DEFAULT_PAGE_TIMEOUT_MS / S})
  --hang-grace S      an engine that has not returned S seconds after the timeout is hung: its pages
                      fail, the jobs held for later go back to the queue, and the process exits with
                      status ${EXIT_ENGINE_HUNG} for its supervisor to restart it (default ${DEFAULT_HANG_GRACE_MS / S})
  --lock-duration S   how long a dead worker's jobs wait before another worker takes them over (default
                      ${DEFAULT_LOCK_DURATION_MS / S}; at least ${MIN_SAFE_LOCK_DURATION_MS / S} is safe: a live worker renews its locks every quarter to
                      half of it, and shorter locks can be lost to a Redis outage)
  --stalled-interval S  how often to look for such jobs (default ${DEFAULT_STALLED_INTERVAL_MS / S})
  --max-stalled N     a page whose worker died more than N times fails (default ${DEFAULT_MAX_STALLED_COUNT}); a worker
                      that lost a page's lock but is alive does not count
  --max-pages N       recycle the process after it has taken N pages (default $SCRIPTORIUM_MAX_PAGES, else no limit)
  --max-rss SIZE      recycle the process once its resident memory is past SIZE, read as each page
                      settles: 12G, 512M, binary units (default $SCRIPTORIUM_MAX_RSS, else no limit).
                      Recycling takes no new page, finishes the pages taken, closes as on SIGTERM and
                      exits with status ${EXIT_WORKER_RECYCLED}, for its supervisor to start a fresh process

Durations S are whole seconds: 90, or with a unit, 90s, 5m or 2h.`;

const OPTIONS = {
  model: text(),
  'model-cache': text(),
  variant: choice(VARIANTS),
  storage: text(),
  batch: BATCH_OPTION,
  concurrency: integer({ min: 1 }),
  threads: integer({ min: 1 }),
  ...ENGINE_OPTIONS,
  'metrics-port': port({ anyFreePort: false }),
  'metrics-host': text(),
  'page-timeout': duration({ unit: 's', min: S }).default(DEFAULT_PAGE_TIMEOUT_MS),
  'hang-grace': duration({ unit: 's', min: S }).default(DEFAULT_HANG_GRACE_MS),
  'lock-duration': duration({ unit: 's', min: S }).default(DEFAULT_LOCK_DURATION_MS),
  'stalled-interval': duration({ unit: 's', min: S }).default(DEFAULT_STALLED_INTERVAL_MS),
  'max-stalled': integer({ min: 0 }).default(DEFAULT_MAX_STALLED_COUNT),
  'max-pages': integer({ min: 1 }).orEnv('SCRIPTORIUM_MAX_PAGES'),
  'max-rss': byteSize().orEnv('SCRIPTORIUM_MAX_RSS'),
};

export const workCommand = defineCommand({ usage: USAGE, options: OPTIONS, run: runWork });

async function runWork({ options: values }: CommandLine<typeof OPTIONS>): Promise<number> {
  const { variant, batch, threads, 'metrics-port': metricsPort } = values;
  if (values['metrics-host'] !== undefined && metricsPort === undefined) throw new UsageError('--metrics-host needs --metrics-port');
  const faults = {
    pageTimeoutMs: values['page-timeout'],
    hangGraceMs: values['hang-grace'],
    lockDurationMs: values['lock-duration'],
    stalledIntervalMs: values['stalled-interval'],
    maxStalledCount: values['max-stalled'],
  };
  const storage = openCommandStorage(values.storage);
  const logger = commandLogger('info');

  const redis = await openQueueRedis();
  let metrics: MetricsServer | undefined;
  try {
    if (metricsPort !== undefined) {
      metrics = await serveMetrics({ port: metricsPort, host: values['metrics-host'], redisUrl: redis.url, logger });
      logger.info({ url: metrics.url }, 'serving metrics');
    }
    const model = await resolveModelDir(values.model, { cacheDir: values['model-cache'], logger });
    const recycle = { maxPages: values['max-pages'], maxRssBytes: values['max-rss'] };
    const workers = await startOcrWorkers({ model, checkpointId: checkpointIdentity(model.dir), variant, threads, ...engineChoices(values), storage, redisUrl: redis.url, batch, concurrency: values.concurrency, logger, ...faults, recycle });
    metrics?.health.modelLoaded();
    logger.info({ redis: redis.description, ...faults }, 'taking jobs');
    // A signal and a recycle limit stop the worker the same way; whichever comes first sets the exit status.
    let stopped: Promise<void> | undefined;
    const stop = (fields: Record<string, unknown>, message: string): Promise<void> => {
      if (stopped === undefined) {
        metrics?.health.stopping();
        logger.info(fields, message);
        stopped = workers.close();
      }
      return stopped;
    };
    const exitCode = await new Promise<number>((resolve, reject) => {
      onShutdownSignal((signal) => stop({ signal }, 'stopping: finishing claimed jobs').then(() => resolve(0), reject));
      void workers.recycled.then((recycled) =>
        stop({ ...recycled, exitCode: EXIT_WORKER_RECYCLED }, 'recycling: a limit was passed; finishing claimed jobs, then exiting for a fresh process').then(
          () => resolve(EXIT_WORKER_RECYCLED),
          reject,
        ),
      );
    });
    logger.info({ exitCode }, 'stopped');
    return exitCode;
  } finally {
    await metrics?.close();
    await redis.close();
  }
}
