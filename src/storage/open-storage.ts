// openStorage: the backend for a storage URL: file:///abs/dir or a plain directory path (the
// embedded default), or s3://bucket/prefix.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { FileStorage } from './file-storage.js';
import type { S3StorageOptions } from './s3-config.js';
import { S3Storage } from './s3-storage.js';
import type { Storage } from './storage.js';
import { StorageError, describeCause } from './storage-error.js';

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
