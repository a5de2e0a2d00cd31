// A worker process, shared by `scriptorium work` and `scriptorium run` (which only parse options
// and print): the model loaded once, a page worker that reads page jobs through it, a document
// worker that assembles finished documents, the heartbeat that lists the process among the live
// workers, a clean close, the exit status of a process whose engine hung, and the limits past which
// the process asks to be recycled (worker-recycling.ts).
import type { DeviceSpec } from '../engine/compute-device.js';
import type { Precision } from '../engine/precision.js';
import os from 'node:os';

import type { Logger } from 'pino';

import { pagesInHand, type BatchSize } from '../engine/batch-size.js';
import { OcrEngine } from '../engine/ocr-engine.js';
import type { Variant } from '../vocabulary/ocr-vocabulary.js';
import type { WeightQuantization } from '../engine/native-binding.js';
import { LiveWorkerHeartbeat } from '../queue/live-workers.js';
import { connectRedis, redactedRedisUrl, redisOptions } from '../queue/redis.js';
import { RedisDataWatch, redisDataLossMessage } from '../queue/redis-data-watch.js';
import { flushTraces, queueTelemetry } from '../queue/tracing.js';
import type { Storage } from '../storage/storage.js';
import { startDocumentWorker } from './document-worker.js';
import { PagePipeline } from './page-pipeline.js';
import { startPageWorker, type PageWorkerOptions } from './page-worker.js';
import { WorkerActivity } from './worker-activity.js';
import { WorkerRecycling, type RecycleLimits, type RecycleReason } from './worker-recycling.js';
import { workerMetrics } from './worker-metrics.js';

/** Exit status of a worker process whose engine hung: its supervisor should start a fresh one. */
export const EXIT_ENGINE_HUNG = 70;

/** Page worker settings passed through as they are (see PageWorkerOptions for their defaults). */
export type PageFaultOptions = Pick<PageWorkerOptions, 'pageTimeoutMs' | 'hangGraceMs' | 'lockDurationMs' | 'stalledIntervalMs' | 'maxStalledCount'>;

export interface OcrWorkersOptions extends PageFaultOptions {
  /** The checkpoint folder, and whether it has random weights (`scriptorium model synth`). */
  model: { dir: string; synthetic: boolean };
  /** The checkpoint's identity (sha256:…), written into every page result; may still be computing. */
  checkpointId: string | Promise<string>;
  /** Overrides the variant detected from config.json (V1 and V3 checkpoints can look alike). */
  variant?: Variant;
  /** Engine threads. Default: one per CPU. */
  threads?: number;
  /** Where the decoder runs (default cpu). */
  device?: DeviceSpec;
  /** Activation precision of the CPU engine (default exact). */
  precision?: Precision;
  /** int8: experts and vocabulary head in int8 (default none). */
  quantize?: WeightQuantization;
  storage: Storage;
  redisUrl: string;
  /** Most pages decoded together (the engine's continuous batch). Default auto (engine/batch-size.ts). */
  batch?: BatchSize;
  /** Page jobs held at once. Default 2 × batch: the next pages are rendered and encoded, ready to join. */
  concurrency?: number;
  logger: Logger;
  /** Interval of the live-worker heartbeat. Default DEFAULT_HEARTBEAT_MS. */
  heartbeatMs?: number;
  /** Pages and resident memory past which the process asks to be recycled. Default: no limits. */
  recycle?: RecycleLimits;
}

export interface OcrWorkers {
  engine: OcrEngine;
  checkpointId: string;
  /** Page jobs this process holds now. */
  claimedPages(): number;
  /**
   * Resolves once a recycle limit is passed: the process takes no new page from then on, and should
   * close and exit with EXIT_WORKER_RECYCLED. Never resolves without limits.
   */
  recycled: Promise<RecycleReason>;
  /** Stops claiming jobs, waits for the claimed ones to finish, unregisters, closes the Redis connections. */
  close(): Promise<void>;
}

export async function startOcrWorkers(options: OcrWorkersOptions): Promise<OcrWorkers> {
  const { model, storage, logger } = options;
  const [engine, checkpointId] = await Promise.all([
    OcrEngine.load(model.dir, { variant: options.variant, threads: options.threads, device: options.device, precision: options.precision, quantize: options.quantize, maxSequences: options.batch }),
    options.checkpointId,
  ]);
  const concurrency = options.concurrency ?? pagesInHand(engine.batch.size);
  logger.info({ batch: engine.batch.size, why: engine.batch.why, concurrency }, 'continuous batch');
  const redis = connectRedis(redisOptions(options.redisUrl, 'client'));
  // Reconnection is automatic; a failed heartbeat or counter is logged where it is used.
  redis.on('error', (error) => logger.debug({ err: error }, 'worker status connection: Redis error'));
  const activity = new WorkerActivity(redis, logger);
  const host = os.hostname();
  const engineLabels = { backend: engine.model.backend, variant: engine.variant };
  workerMetrics().workerInfo.set(engineLabels, 1);
  const pipeline = new PagePipeline({
    engine,
    storage,
    logger,
    host,
    checkpointId,
    synthetic: model.synthetic,
    onDecoded: (decoded) => activity.decoded(decoded),
  });
  // Registered before it claims anything: other workers look its key up to tell whether it is alive.
  const heartbeat = await LiveWorkerHeartbeat.start(
    redis,
    {
      host,
      pid: process.pid,
      backend: engine.model.backend,
      threads: engine.model.threads,
      variant: engine.variant,
      checkpoint: checkpointId,
      startedAt: Date.now(),
    },
    () => activity.progress(),
    { intervalMs: options.heartbeatMs, onError: (error) => logger.warn({ err: error }, 'live-worker heartbeat failed; retrying at the next one') },
  );
  // Redis emptied under the worker: it keeps running (BullMQ reconnects and waits for jobs) and says what to do.
  const dataWatch = await RedisDataWatch.start(redis, {
    onLost: (loss) => logger.error({ redis: redactedRedisUrl(options.redisUrl), storage: storage.url, ...loss }, redisDataLossMessage(storage.url)),
    onError: (error) => logger.debug({ err: error }, 'could not check whether Redis kept its data; checking again shortly'),
  });
  const connection = redisOptions(options.redisUrl, 'worker');
  const telemetry = await queueTelemetry();
  const recycling = new WorkerRecycling(options.recycle ?? {});
  const pages = startPageWorker({
    telemetry,
    pipeline,
    connection,
    logger,
    workerKey: heartbeat.key,
    concurrency,
    pageTimeoutMs: options.pageTimeoutMs,
    hangGraceMs: options.hangGraceMs,
    lockDurationMs: options.lockDurationMs,
    stalledIntervalMs: options.stalledIntervalMs,
    maxStalledCount: options.maxStalledCount,
    admit: (pageCount) => recycling.admit(pageCount),
    onEngineHung: () => {
      logger.fatal({ exitCode: EXIT_ENGINE_HUNG }, 'the engine is hung: closing the workers and exiting so that a fresh process takes over');
      void close().finally(() => process.exit(EXIT_ENGINE_HUNG));
    },
  });
  const documents = startDocumentWorker({
    telemetry,
    storage,
    connection,
    logger,
    lockDurationMs: options.lockDurationMs,
    stalledIntervalMs: options.stalledIntervalMs,
  });
  activity.watchPages(pages);
  pages.on('completed', () => recycling.pageSettled());
  pages.on('failed', () => recycling.pageSettled());
  activity.watchDocuments(documents);
  await Promise.all([pages.waitUntilReady(), documents.waitUntilReady()]);
  logger.info(
    {
      variant: engine.variant,
      checkpoint: checkpointId,
      synthetic: model.synthetic,
      convertedBytes: engine.model.convertedBytes,
      quantize: engine.model.quantize,
      quantizedBytes: engine.model.quantizedBytes,
      backend: engine.model.backend,
      kernels: engine.model.kernels,
      precision: engine.model.precision,
      threads: engine.model.threads,
      storage: storage.url,
      worker: heartbeat.key,
      rssBytes: process.memoryUsage.rss(),
      ...options.recycle,
    },
    'worker ready',
  );
  const maxRssBytes = options.recycle?.maxRssBytes;
  if (maxRssBytes !== undefined && process.memoryUsage.rss() > maxRssBytes) {
    logger.warn({ rssBytes: process.memoryUsage.rss(), maxRssBytes }, 'the loaded worker is already past its resident-memory limit: it is recycled after each page job it takes');
  }

  let closing: Promise<void> | undefined;
  function close(): Promise<void> {
    closing ??= (async () => {
      await Promise.all([pages.close(), documents.close()]);
      dataWatch.stop();
      await heartbeat.stop().catch((error: unknown) => logger.warn({ err: error }, 'could not remove the live-worker entry; it expires on its own'));
      redis.disconnect();
      workerMetrics().workerInfo.remove(engineLabels);
      await flushTraces();
    })();
    return closing;
  }
  return { engine, checkpointId, claimedPages: () => activity.progress().currentJobs.length, recycled: recycling.requested, close };
}
