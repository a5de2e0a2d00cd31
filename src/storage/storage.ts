// The one storage interface of the pipeline, and openStorage to get a backend from a URL:
// file:///abs/dir or a plain directory path (the embedded default), or s3://bucket/prefix.
// Storage holds bytes under keys; it knows nothing about what the bytes mean.
import path from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

import { FileStorage } from './file-storage.js';
import type { S3StorageOptions } from './s3-config.js';
import { S3Storage } from './s3-storage.js';
import { StorageError, describeCause } from './storage-error.js';

export { StorageError, type StorageErrorCode } from './storage-error.js';
export { checkKey, checkPrefix, joinKey } from './storage-key.js';
export type { S3StorageOptions } from './s3-config.js';

/** One stored object, as listed or stat'ed. `key` is relative to the storage root. */
export interface StoredObject {
  key: string;
  /** Size in bytes. */
  size: number;
  /** The entity tag the backend reports (S3: quoted, e.g. '"9e10…"'); absent on file://. */
  etag?: string;
  lastModified?: Date;
}

export interface PutOptions {
  /** MIME type stored with the object on S3 (default: none, S3 then reports binary/octet-stream); ignored by file://. */
  contentType?: string;
}

export interface ListOptions {
  /**
   * true: every object whose key starts with the prefix.
   * false (default): only objects with no '/' in the key after the prefix, like one directory level.
   */
  recursive?: boolean;
}

/**
 * Objects under keys relative to the storage root: '/'-separated, no '.', '..' or empty segments
 * (see checkKey). Every method rejects with a StorageError whose `code` says what to do next.
 */
export interface Storage {
  /** Where the objects live: file:///abs/dir or s3://bucket/prefix. */
  readonly url: string;
  /** Stores `body` under `key`, replacing any object there; readers never see a partial object. */
  put(key: string, body: Buffer | Readable, options?: PutOptions): Promise<void>;
  /** The whole object in memory; rejects with code 'not_found' if there is none. */
  get(key: string): Promise<Buffer>;
  /** The object as a stream, for large objects; rejects with code 'not_found' if there is none. */
  getStream(key: string): Promise<Readable>;
  exists(key: string): Promise<boolean>;
  /** Removes the object; deleting a key that does not exist succeeds. */
  delete(key: string): Promise<void>;
  /** Objects whose keys start with `prefix` ('' for all), in lexical (UTF-8 byte) order of key. */
  list(prefix: string, options?: ListOptions): AsyncIterable<StoredObject>;
  /** Size and metadata of one object; rejects with code 'not_found' if there is none. */
  stat(key: string): Promise<StoredObject>;
}

export interface OpenStorageOptions {
  /** Settings for s3:// URLs (default: everything from the environment, see S3StorageOptions). */
  s3?: S3StorageOptions;
}

const SUPPORTED_URLS = 'use file:///absolute/dir, a directory path, or s3://bucket/prefix';

/** Opens the backend for `url`: file:///abs/dir, a plain path (relative to the working directory), or s3://bucket/prefix. */
export function openStorage(url: string, options: OpenStorageOptions = {}): Storage {
  if (url.trim() === '') throw new StorageError('permanent', `the storage URL is empty: ${SUPPORTED_URLS}`);
  // Two or more letters, so that a Windows drive ('C:') is never taken for a scheme.
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case undefined:
      return new FileStorage(path.resolve(url));
    case 'file':
      return new FileStorage(directoryOfFileUrl(url));
    case 's3':
      return new S3Storage(url, options.s3);
    default:
      throw new StorageError('permanent', `unsupported storage URL scheme '${scheme}:' in ${url}: ${SUPPORTED_URLS}`);
  }
}

function directoryOfFileUrl(url: string): string {
  try {
    return fileURLToPath(url);
  } catch (error) {
    throw new StorageError('permanent', `invalid file URL ${url} (${describeCause(error)}): ${SUPPORTED_URLS}`, { cause: error });
  }
}
