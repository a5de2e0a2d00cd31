// Uploads already enqueued, remembered in Redis for a while: S3 and MinIO deliver events at least
// once, and a restarted watch or a second one may see the same event again. Skipping a remembered
// upload saves reading the object once more; enqueueing it again would still add nothing, since job
// ids come from the docId. Remembered only after the enqueue succeeded, so a failed one is retried.
import { createHash } from 'node:crypto';
import type { RedisClient } from '../queue/redis.js';


/** How long an upload is remembered unless told otherwise: longer than any redelivery takes. */
export const DEFAULT_REMEMBER_SECONDS = 3600;

const KEY_PREFIX = 'scriptorium:watch:seen:';

export class RecentUploads {
  /**
   * `scope` holds what else makes an enqueue different (the storage and the OCR options), so that two
   * watches feeding different storages or models from one bucket do not skip each other's uploads.
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly scope: string,
    private readonly rememberSeconds = DEFAULT_REMEMBER_SECONDS,
  ) {}

  async has(uploadId: string): Promise<boolean> {
    return (await this.redis.exists(this.keyOf(uploadId))) === 1;
  }

  async remember(uploadId: string): Promise<void> {
    await this.redis.set(this.keyOf(uploadId), '1', 'EX', this.rememberSeconds);
  }

  /** A fixed-length key whatever the object key holds. */
  keyOf(uploadId: string): string {
    return KEY_PREFIX + createHash('sha256').update(this.scope).update('\n').update(uploadId).digest('hex');
  }
}
