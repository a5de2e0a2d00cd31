// S3 inputs: the objects under an s3://bucket/prefix input, listed page by page by the storage layer,
// or one object named exactly. The prefix is an S3 prefix, as in `aws s3 ls`: s3://in/scans also lists
// s3://in/scans-2024/…; end it with '/' to stay inside one "folder". An exact object is that key alone.
// Archives in a bucket, listed or named, are not expanded: they become documents.
import { openStorage } from '../storage/open-storage.js';
import type { S3StorageOptions } from '../storage/s3-config.js';
import { isS3Url, parseS3Url, type S3Location } from '../storage/s3-url.js';
import type { Storage } from '../storage/storage.js';
import { describeCause, StorageError } from '../storage/storage-error.js';
import { checkKey } from '../storage/storage-key.js';
import { unreachableInput, type InputDocument, type SkipListener, type UnreachableInputPolicy } from './input-document.js';

export function isS3Input(input: string): boolean {
  return isS3Url(input);
}

/** Opens buckets once per expansion; the documents from a bucket read their bytes through its storage. */
export class BucketStorages {
  readonly #storages = new Map<string, Storage>();

  constructor(private readonly s3Options: S3StorageOptions | undefined) {}

  of(bucket: string): Storage {
    let storage = this.#storages.get(bucket);
    if (storage === undefined) {
      storage = openStorage(`s3://${bucket}`, { s3: this.s3Options });
      this.#storages.set(bucket, storage);
    }
    return storage;
  }
}

/** The bucket and path of an s3:// input, or undefined once `skip` was told why it is none. */
function s3LocationOf(url: string, skip: SkipListener): S3Location | undefined {
  try {
    return parseS3Url(url);
  } catch (error) {
    skip(url, describeCause(error));
    return undefined;
  }
}

export async function* s3Documents(
  input: string,
  buckets: BucketStorages,
  skip: SkipListener,
  whenUnreachable: UnreachableInputPolicy,
): AsyncGenerator<InputDocument> {
  const location = s3LocationOf(input, skip);
  if (location === undefined) return;
  const { bucket, path: prefix } = location;
  try {
    const storage = buckets.of(bucket);
    for await (const object of storage.list(prefix, { recursive: true })) {
      const uri = `s3://${bucket}/${object.key}`;
      try {
        checkKey(object.key); // S3 allows keys such as 'a//b' or '../b' that no storage key may be
      } catch (error) {
        skip(uri, describeCause(error));
        continue;
      }
      yield { uri, size: object.size, bytes: () => storage.get(object.key) };
    }
  } catch (error) {
    if (!(error instanceof StorageError)) throw error;
    if (error.code === 'transient') unreachableInput(whenUnreachable, skip, input, error);
    else skip(input, `cannot list it: ${error.message}`);
  }
}

/**
 * The object at s3://bucket/key and nothing else: never another key that starts with this one. A
 * missing object (or bucket) is skipped as 'object not found'; an unreachable one as `whenUnreachable` says.
 */
export async function* s3ObjectDocuments(
  url: string,
  buckets: BucketStorages,
  skip: SkipListener,
  whenUnreachable: UnreachableInputPolicy,
): AsyncGenerator<InputDocument> {
  const location = s3LocationOf(url, skip);
  if (location === undefined) return;
  if (location.path === '') {
    skip(url, 'not an S3 object: write it as s3://bucket/key');
    return;
  }
  const { bucket, path: key } = location;
  const uri = `s3://${bucket}/${key}`;
  try {
    checkKey(key);
  } catch (error) {
    skip(uri, describeCause(error));
    return;
  }
  let storage: Storage;
  let size: number;
  try {
    storage = buckets.of(bucket);
    size = (await storage.stat(key)).size;
  } catch (error) {
    if (!(error instanceof StorageError)) throw error;
    if (error.code === 'transient') unreachableInput(whenUnreachable, skip, uri, error);
    else skip(uri, error.code === 'not_found' ? `object not found: ${uri}` : `cannot read it: ${error.message}`);
    return;
  }
  yield { uri, size, bytes: () => storage.get(key) };
}
