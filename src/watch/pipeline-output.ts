// The objects the pipeline writes itself: staged sources, results and rejection records under the
// storage's root. When that storage is the watched bucket, their events must start nothing, or every
// result would be read as a new document.
import { isPipelineKey } from '../jobs/storage-layout.js';

/**
 * Whether s3://bucket/key lies in the output folders of the storage at `storageUrl` (s3://bucket or
 * s3://bucket/prefix; a file:// storage writes no object to any bucket).
 */
export function isPipelineOutput(storageUrl: string, bucket: string, key: string): boolean {
  const match = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(storageUrl);
  if (match === null || match[1] !== bucket) return false;
  const root = match[2] === '' ? '' : `${match[2].replace(/\/+$/, '')}/`;
  return key.startsWith(root) && isPipelineKey(key.slice(root.length));
}
