// The documents inside a tar archive, plain or gzip-compressed, streamed in one pass with tar-stream:
// each entry is read (or drained, when skipped) before the next header is parsed.
import { createReadStream } from 'node:fs';
import { Transform, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';

import tar, { type Header } from 'tar-stream';

import { describeCause } from '../storage/storage-error.js';
import { archiveBytesProblem, entryCountProblem, entrySizeProblem, type ArchiveLimits } from './archive-limits.js';
import { archiveEntryPath } from './archive-entry-path.js';
import type { InputDocument, SkipListener } from './input-document.js';

export type TarCompression = 'gzip' | 'none';

/**
 * Yields the regular files of the tar at `archivePath` as `archivePath!entry/path`, in archive order, each
 * read into memory before it is yielded; entries that are unsafe or over `limits` go to `skip`.
 */
export async function* tarDocuments(
  archivePath: string,
  compression: TarCompression,
  limits: ArchiveLimits,
  skip: SkipListener,
): AsyncGenerator<InputDocument> {
  const extract = tar.extract();
  const stages: Array<Readable | Writable> = [
    createReadStream(archivePath),
    ...(compression === 'gzip' ? [createGunzip()] : []),
    // Also counts what entries do not: headers and the zero blocks after the end, a gzip bomb's favourite padding.
    byteLimit(limits.maxArchiveBytes),
    extract as unknown as Writable, // tar-stream's streams (streamx) work in Node's pipeline; their types do not say so
  ];
  // A failing stage destroys `extract` with its error, which the entry loop below reports.
  const piping = pipeline(stages).catch(() => undefined);
  let count = 0;
  let total = 0;
  try {
    for await (const entry of extract) {
      const { header } = entry;
      total += header.size; // skipped entries are decompressed too, to get past them
      const stop = entryCountProblem(++count, limits) ?? archiveBytesProblem(header.name, total, limits);
      if (stop !== undefined) {
        skip(archivePath, stop);
        return;
      }
      if (header.type === 'directory') {
        entry.resume();
        continue;
      }
      const entryPath = archiveEntryPath(header.name);
      const uri = `${archivePath}!${entryPath.ok ? entryPath.path : header.name}`;
      const problem = entryPath.ok ? entryProblem(header, limits) : entryPath.problem;
      if (problem !== undefined) {
        skip(uri, problem);
        entry.resume(); // drained: the next header follows its data
        continue;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of entry) chunks.push(chunk as Buffer);
      const bytes = Buffer.concat(chunks);
      yield { uri, size: bytes.length, bytes: async () => bytes };
    }
  } catch (error) {
    const problem = error instanceof ArchiveBytesError ? error.message : `the tar archive is damaged or truncated: ${describeCause(error)}`;
    skip(archivePath, `stopped reading it: ${problem}; any later entries were not read`);
  } finally {
    extract.destroy();
    await piping;
  }
}

/** Why a non-directory entry must not be read, or undefined. */
function entryProblem(header: Header, limits: ArchiveLimits): string | undefined {
  switch (header.type) {
    case 'file':
    case 'contiguous-file':
      return entrySizeProblem(header.size, limits);
    case 'symlink':
      return `it is a symbolic link (to ${header.linkname}), not a regular file`;
    case 'link':
      return `it is a hard link (to ${header.linkname}), not a regular file`;
    case 'character-device':
    case 'block-device':
    case 'fifo':
      return `it is a ${header.type}, not a regular file`;
    default:
      return `its entry type ${header.type ?? 'unrecognised'} is not a regular file`;
  }
}

class ArchiveBytesError extends Error {}

/** Passes bytes on until more than `limit` went through, then fails with an ArchiveBytesError. */
function byteLimit(limit: number): Transform {
  let passed = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      passed += chunk.length;
      if (passed <= limit) return callback(null, chunk);
      callback(new ArchiveBytesError(`it decompresses to more than ${limit} bytes (archiveLimits.maxArchiveBytes); split the archive or raise the limit`));
    },
  });
}
