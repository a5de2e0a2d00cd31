// The one storage interface of the pipeline. Storage holds bytes under keys (storage-key.ts); it
// knows nothing about what the bytes mean. openStorage (open-storage.ts) picks a backend from a URL.
import type { Readable } from 'node:stream';

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

/** An object's bytes with its version, the token putIfUnchanged compares. */
export interface VersionedObject {
  body: Buffer;
  /** S3: the object's ETag. file://: the MD5 of its bytes (hex). Equal versions mean the same bytes. */
  version: string;
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
  /** The whole object with its version, for a later putIfUnchanged; rejects with code 'not_found' if there is none. */
  getVersioned(key: string): Promise<VersionedObject>;
  /**
   * Stores `body` under `key` only if the object there is still the one the caller read: `expected`
   * is its version (getVersioned), or null for no object at all. Otherwise it changes nothing and
   * rejects with code 'conflict'. Of writers racing from the same state, one succeeds.
   */
  putIfUnchanged(key: string, body: Buffer, expected: string | null, options?: PutOptions): Promise<void>;
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
