// StorageError: every failure a Storage reports, classified by what the caller should do next.
import type { Storage } from './storage.js';

/**
 * - `not_found`: the object does not exist (check the key and the storage URL).
 * - `transient`: the backend was unreachable, throttled or failing; retrying later may succeed.
 * - `permanent`: retrying will not help; fix the key, the configuration or the permissions.
 * - `conflict`: a conditional write found the object changed since it was read (putIfUnchanged).
 */
export type StorageErrorCode = 'not_found' | 'transient' | 'permanent' | 'conflict';

export interface StorageErrorOptions {
  /** The key the failed operation was about, when there was one. */
  key?: string;
  /** The error reported by the file system or the SDK. */
  cause?: unknown;
}

export class StorageError extends Error {
  override readonly name = 'StorageError';
  readonly code: StorageErrorCode;
  readonly key: string | undefined;

  constructor(code: StorageErrorCode, message: string, options: StorageErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.key = options.key;
  }
}

/** The most useful one-line description of an unknown thrown value, for error messages. */
export function describeCause(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return describeCause(error.errors[0]);
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

/** True when `probe` succeeds, false when it fails with not_found; other errors propagate. */
export async function existsBy(probe: () => Promise<unknown>): Promise<boolean> {
  try {
    await probe();
    return true;
  } catch (error) {
    if (error instanceof StorageError && error.code === 'not_found') return false;
    throw error;
  }
}

/** A stored object read with `parse` (which may throw, e.g. on damaged JSON); undefined when it is not there. */
export async function readStored<T>(key: string, storage: Storage, parse: (text: string, key: string) => T): Promise<T | undefined> {
  try {
    return parse((await storage.get(key)).toString('utf8'), key);
  } catch (error) {
    if (error instanceof StorageError && error.code === 'not_found') return undefined;
    throw error;
  }
}
