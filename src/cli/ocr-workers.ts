// One worker process's queue side, shared by `scriptorium work` and `scriptorium run`: the model
// loaded once, a page worker that batches page jobs through it, and a document worker that
// assembles finished documents.
import os from 'node:os';

import type { Logger } from 'pino';

import { OcrEngine } from '../engine/ocr-engine.js';
import type { Variant } from '../engine/model-config.js';
import { redisOptions } from '../queue/redis.js';
import type { Storage } from '../storage/storage.js';
import { startDocumentWorker } from '../worker/document-worker.js';
import { PagePipeline } from '../worker/page-pipeline.js';
import { startPageWorker } from '../worker/page-worker.js';
import { checkpointIdentity } from './checkpoint-identity.js';
import type { ResolvedModel } from './default-model.js';

export interface OcrWorkersOptions {
  model: ResolvedModel;
  /** Overrides the variant detected from config.json (V1 and V3 checkpoints can look alike). */
  variant?: Variant;
  /** Engine threads. Default: one per CPU. */
  threads?: number;
  storage: Storage;
  redisUrl: string;
  /** Page jobs per batched decode. Default 4. */
  batch?: number;
  /** Page jobs claimed at once. Default 2 × batch. */
  concurrency?: number;
  logger: Logger;
}

export interface OcrWorkers {
  engine: OcrEngine;
  checkpointId: string;
  /** Stops claiming jobs, waits for the claimed ones to finish, closes the Redis connections. */
  close(): Promise<void>;
}

export async function startOcrWorkers(options: OcrWorkersOptions): Promise<OcrWorkers> {
  const { model, storage, logger } = options;
  const [engine, checkpointId] = await Promise.all([
    OcrEngine.load(model.dir, { variant: options.variant, threads: options.threads }),
    checkpointIdentity(model.dir),
  ]);
  const pipeline = new PagePipeline({ engine, storage, logger, host: os.hostname(), checkpointId, synthetic: model.synthetic });
  const connection = redisOptions(options.redisUrl, 'worker');
  const pages = startPageWorker({ pipeline, connection, logger, batch: options.batch, concurrency: options.concurrency });
  const documents = startDocumentWorker({ storage, connection, logger });
  await Promise.all([pages.waitUntilReady(), documents.waitUntilReady()]);
  logger.info(
    { variant: engine.variant, checkpoint: checkpointId, kernels: engine.model.kernels, threads: engine.model.threads, storage: storage.url },
    'worker ready',
  );
  let closing: Promise<void> | undefined;
  return {
    engine,
    checkpointId,
    close() {
      closing ??= Promise.all([pages.close(), documents.close()]).then(() => undefined);
      return closing;
    },
  };
}
