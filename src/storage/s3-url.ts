// The one reader of s3://bucket/path URLs, for storages, inputs and watched buckets alike. It loads
// no AWS SDK, so that recognising a URL costs nothing.
import { StorageError } from './storage-error.js';

/** A bucket name as S3 and S3-compatible servers accept it: 3 or more letters, digits, '.', '-' or '_'. */
const BUCKET_PATTERN = /^[a-z0-9][a-z0-9._-]{2,254}$/i;

export interface S3Location {
  bucket: string;
  /** Everything after 's3://bucket/' as written: a key, a prefix, or '' (the whole bucket). */
  path: string;
}

export function isS3Url(url: string): boolean {
  return /^s3:\/\//i.test(url);
}

/** The bucket and path of s3://bucket[/path]; a permanent StorageError saying the expected form otherwise. */
export function parseS3Url(url: string): S3Location {
  const match = /^s3:\/\/([^/]*)(?:\/(.*))?$/is.exec(url);
  const bucket = match?.[1] ?? '';
  if (!BUCKET_PATTERN.test(bucket)) {
    throw new StorageError(
      'permanent',
      `invalid S3 URL ${url}: write it as s3://bucket or s3://bucket/prefix, the bucket name being 3 or more letters, digits, '.', '-' or '_'`,
    );
  }
  return { bucket, path: match?.[2] ?? '' };
}
