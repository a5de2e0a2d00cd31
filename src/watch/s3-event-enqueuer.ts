// What every watch source does with a delivered notification: read it, leave out the pipeline's own
// output and uploads already enqueued, and enqueue each new object through the producer, named as one
// exact object (never as a prefix of other keys), into the same document and jobs that `scriptorium
// enqueue` makes of it. Resolves once every object is safely enqueued (or rejected and recorded, as
// enqueue records it: an object deleted since its event included); rejects when the delivery must be
// retried.
import type { Logger } from 'pino';

import { enqueueDocuments, type EnqueueOptions, type QueuedState } from '../producer/enqueue.js';
import { NoRoomError, type QueueCapacity } from '../queue/queue-capacity.js';
import { documentJobId } from '../queue/job-ids.js';
import { connectRedis, type RedisClient, redisOptions } from '../queue/redis.js';
import { isPipelineOutput } from './pipeline-output.js';
import { RecentUploads } from './recent-uploads.js';
import { readS3Notification, type CreatedObject } from './s3-notifications.js';

export interface S3EventEnqueuerOptions {
  /** What the documents are queued with and where they are staged: as `scriptorium enqueue` takes them. */
  enqueue: Pick<EnqueueOptions, 'ocr' | 'storage' | 'pdfPassword' | 'priority' | 'attempts'>;
  /** The queue's Redis; recent uploads are remembered there too. */
  redisUrl: string;
  logger: Logger;
  /** How long an enqueued upload is remembered, to skip its repeated events. Default DEFAULT_REMEMBER_SECONDS. */
  rememberSeconds?: number;
  /**
   * Room each document needs first (its page queue's limit, Redis's memory): a document without room
   * rejects with a NoRoomError, so that its event is delivered again later. Default: none.
   */
  capacity?: QueueCapacity;
}

/**
 * What happened to one announced object: the producer's states (rejected also when the object no
 * longer exists), or
 * - pipeline-output: it lies under the storage's staging/, results/ or rejected/;
 * - duplicate: this upload was enqueued a short while ago.
 */
export type UploadState = QueuedState | 'rejected' | 'pipeline-output' | 'duplicate';

export interface UploadOutcome {
  bucket: string;
  key: string;
  state: UploadState;
  docId?: string;
  reason?: string;
}

export class S3EventEnqueuer {
  readonly #options: S3EventEnqueuerOptions;
  readonly #redis: RedisClient;
  readonly #recent: RecentUploads;

  constructor(options: S3EventEnqueuerOptions) {
    this.#options = options;
    this.#redis = connectRedis(redisOptions(options.redisUrl, 'client'));
    const { storage, ocr } = options.enqueue;
    const scope = JSON.stringify({ storage: storage.url, ocr });
    this.#recent = new RecentUploads(this.#redis, scope, options.rememberSeconds);
  }

  /**
   * Enqueues the objects a notification announces, one after the other. Throws S3NotificationError
   * when the text is no notification (retrying cannot help); any other rejection means "try again later".
   */
  async enqueueNotification(text: string, logger: Logger = this.#options.logger): Promise<UploadOutcome[]> {
    const notification = readS3Notification(text);
    for (const reason of notification.malformed) logger.warn({ reason }, 'left out an event record that cannot be read');
    const outcomes: UploadOutcome[] = [];
    for (const object of notification.created) outcomes.push(await this.#enqueueObject(object, logger));
    return outcomes;
  }

  async close(): Promise<void> {
    await this.#redis.quit();
  }

  async #enqueueObject(object: CreatedObject, logger: Logger): Promise<UploadOutcome> {
    const { bucket, key, uploadId } = object;
    const log = logger.child({ bucket, key });
    if (isPipelineOutput(this.#options.enqueue.storage.url, bucket, key)) {
      log.debug('ignored: the pipeline wrote it');
      return { bucket, key, state: 'pipeline-output' };
    }
    if (uploadId !== undefined && (await this.#recent.has(uploadId))) {
      log.debug('ignored: this upload was enqueued a short while ago');
      return { bucket, key, state: 'duplicate' };
    }
    const { capacity } = this.#options;
    const summary = await enqueueDocuments([{ kind: 's3-object', url: `s3://${bucket}/${key}` }], {
      ...this.#options.enqueue,
      // The event source hands an unacknowledged event over again: an unreachable object is tried then.
      inputs: { whenUnreachable: 'throw' },
      connection: redisOptions(this.#options.redisUrl, 'client'),
      admit: capacity === undefined ? undefined : async (document) => {
        const admission = await capacity.admit(document.variant, document.pageJobs);
        if (!admission.admitted) throw new NoRoomError(document.uri, admission);
      },
    });
    if (uploadId !== undefined) await this.#recent.remember(uploadId);
    // An exact object is one document (archives in a bucket are not expanded): queued, or rejected.
    const [rejected] = summary.rejected;
    if (rejected !== undefined) {
      log.warn({ reason: rejected.reason }, 'rejected: no usable document');
      return { bucket, key, state: 'rejected', reason: rejected.reason };
    }
    const [document] = summary.queued;
    log.info({ docId: document.docId, jobId: documentJobId(document.docId), state: document.state, pages: document.pages }, documentMessage(document.state));
    return { bucket, key, state: document.state, docId: document.docId };
  }
}

function documentMessage(state: QueuedState): string {
  switch (state) {
    case 'enqueued':
      return 'enqueued';
    case 'already-done':
      return 'already done: nothing enqueued';
    case 'already-queued':
      return 'already queued: nothing enqueued';
    case 'retried':
      return 'its failed document job is tried again';
  }
}
