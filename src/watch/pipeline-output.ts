// The objects the pipeline writes itself: staged sources, results and rejection records under the
// storage's root. When that storage is the watched bucket, their events must start nothing, or every
// result would be read as a new document.
import { isPipelineKey } from '../jobs/storage-layout.js';
import { isS3Url, parseS3Url } from '../storage/s3-url.js';

/**
 * Whether s3://bucket/key lies in the output folders of the storage at `storageUrl` (s3://bucket or
 * s3://bucket/prefix, as opened; a file:// storage writes no object to any bucket).
 */
export function isPipelineOutput(storageUrl: string, bucket: string, key: string): boolean {
  if (!isS3Url(storageUrl)) return false;
  const storage = parseS3Url(storageUrl);
  if (storage.bucket !== bucket) return false;
  const prefix = storage.path.replace(/\/+$/, '');
  const root = prefix === '' ? '' : `${prefix}/`;
  return key.startsWith(root) && isPipelineKey(key.slice(root.length));
}
