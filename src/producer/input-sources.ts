// The producer's inputs expanded into documents: files, directories (recursively), zip and tar
// archives (by content, streamed one entry at a time), s3://bucket/prefix listings and exact S3
// objects. Whatever cannot be used is reported through onSkip with its reason, counted, and expansion
// goes on.
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';

import type { S3StorageOptions } from '../storage/s3-config.js';
import { describeCause } from '../storage/storage-error.js';
import { detectArchiveKind, type ArchiveKind } from './archive-kind.js';
import { resolveArchiveLimits, type ArchiveLimits } from './archive-limits.js';
import { walkDirectory } from './directory-walk.js';
import type { InputDocument, SkipListener, UnreachableInputPolicy } from './input-document.js';
import { BucketStorages, isS3Input, s3Documents, s3ObjectDocuments } from './s3-documents.js';
import { tarDocuments } from './tar-documents.js';
import { zipDocuments } from './zip-documents.js';

export type { InputDocument, SkipListener, UnreachableInputPolicy } from './input-document.js';
export { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from './archive-limits.js';

/** One S3 object named exactly: s3://bucket/key is that key alone, never a prefix of other keys. */
export interface S3ObjectInput {
  kind: 's3-object';
  url: string;
}

/** A document already at hand, such as one the HTTP server staged from an upload. */
export interface ReadyDocumentInput {
  kind: 'document';
  document: InputDocument;
}

/** A path, an s3://bucket/prefix to list, one exact S3 object, or a document at hand. */
export type ProducerInput = string | S3ObjectInput | ReadyDocumentInput;

export interface ExpandInputsOptions {
  /** Told about every input or archive entry left out, and why. Default: none (the count is in `skipped`). */
  onSkip?: SkipListener;
  /** Bomb limits per archive. Default: DEFAULT_ARCHIVE_LIMITS (512 MiB per entry, 8 GiB per archive, 200:1, 100,000 entries). */
  archiveLimits?: Partial<ArchiveLimits>;
  /** Settings for s3:// inputs. Default: everything from the environment (see S3StorageOptions). */
  s3?: S3StorageOptions;
  /** An input whose storage stays unreachable after retries. Default 'reject' (see UnreachableInputPolicy). */
  whenUnreachable?: UnreachableInputPolicy;
}

export interface ExpandedInputs extends AsyncIterable<InputDocument> {
  /** Inputs and archive entries reported through onSkip so far. */
  readonly skipped: number;
}

/**
 * The documents of `inputs`, in input order:
 * - a file: itself, or when its content is a zip, tar or tar.gz archive, the regular files inside
 *   (`/abs/archive.zip!inner/path.pdf`; archives inside archives are not expanded);
 * - a directory: its files as above, recursively, in path order; symbolic links below it are not followed;
 * - s3://bucket/prefix: every object whose key starts with the prefix;
 * - { kind: 's3-object', url: 's3://bucket/key' }: that object alone.
 * S3 objects are documents as they are, archives included. Paths are made absolute. Bad input (a missing
 * path or S3 object, an unsafe or oversized archive entry, a bucket that does not exist) is skipped and
 * reported; so is an S3 input that stays unreachable after retries, unless `whenUnreachable` is 'throw'.
 */
export function expandInputs(inputs: readonly ProducerInput[], options: ExpandInputsOptions = {}): ExpandedInputs {
  const limits = resolveArchiveLimits(options.archiveLimits);
  const buckets = new BucketStorages(options.s3);
  const whenUnreachable = options.whenUnreachable ?? 'reject';
  let skipped = 0;
  const skip: SkipListener = (uri, reason) => {
    skipped++;
    options.onSkip?.(uri, reason);
  };
  async function* documents(): AsyncGenerator<InputDocument> {
    for (const input of inputs) {
      if (typeof input !== 'string' && input.kind === 'document') {
        yield input.document;
      } else if (typeof input !== 'string') {
        yield* s3ObjectDocuments(input.url, buckets, skip, whenUnreachable);
      } else if (isS3Input(input)) {
        yield* s3Documents(input, buckets, skip, whenUnreachable);
      } else {
        yield* localDocuments(path.resolve(input), limits, skip);
      }
    }
  }
  return {
    get skipped() {
      return skipped;
    },
    [Symbol.asyncIterator]: () => documents(),
  };
}

/** A path given as an input: followed if it is a symbolic link, since the user named it. */
async function* localDocuments(inputPath: string, limits: ArchiveLimits, skip: SkipListener): AsyncGenerator<InputDocument> {
  const stats = await stat(inputPath).catch((error: unknown) => skip(inputPath, `cannot read the input: ${describeCause(error)}`));
  if (stats === undefined) return;
  if (stats.isDirectory()) {
    for await (const file of walkDirectory(inputPath, skip)) yield* fileDocuments(file.path, file.size, limits, skip);
  } else if (stats.isFile()) {
    yield* fileDocuments(inputPath, stats.size, limits, skip);
  } else {
    skip(inputPath, 'the input is a device, FIFO or socket, not a file or directory');
  }
}

async function* fileDocuments(filePath: string, size: number, limits: ArchiveLimits, skip: SkipListener): AsyncGenerator<InputDocument> {
  let kind: ArchiveKind | undefined;
  try {
    kind = await detectArchiveKind(filePath);
  } catch (error) {
    skip(filePath, `cannot read it: ${describeCause(error)}`);
    return;
  }
  if (kind === 'zip') {
    yield* zipDocuments(filePath, limits, skip);
  } else if (kind === 'tar' || kind === 'tar.gz') {
    yield* tarDocuments(filePath, kind === 'tar.gz' ? 'gzip' : 'none', limits, skip);
  } else {
    yield { uri: filePath, size, bytes: () => readFile(filePath), path: filePath };
  }
}
