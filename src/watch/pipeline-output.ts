// The objects the pipeline writes itself: staged sources, results and rejection records under the
// storage's root. When that storage is the watched bucket, their events must start nothing, or every
// result would be read as a new document.
import { documentKeys } from '../producer/doc-id.js';
import { rejectedInputKey } from '../producer/enqueue.js';

/** The storage's top-level folders as the producer names them: ['staging/', 'results/', 'rejected/']. */
const OUTPUT_FOLDERS = (() => {
  const keys = documentKeys('0'.repeat(32), 'pdf');
  return [keys.source, keys.results, rejectedInputKey('')].map((key) => key.slice(0, key.indexOf('/') + 1));
})();

/**
 * Whether s3://bucket/key lies in the output folders of the storage at `storageUrl` (s3://bucket or
 * s3://bucket/prefix; a file:// storage writes no object to any bucket).
 */
export function isPipelineOutput(storageUrl: string, bucket: string, key: string): boolean {
  const match = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(storageUrl);
  if (match === null || match[1] !== bucket) return false;
  const root = match[2] === '' ? '' : `${match[2].replace(/\/+$/, '')}/`;
  return OUTPUT_FOLDERS.some((folder) => key.startsWith(root + folder));
}
