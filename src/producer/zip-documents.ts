// The documents inside a zip archive, read one entry at a time with yauzl (random access through the
// central directory, each entry inflated as a stream and checked against its declared size).
import yauzl, { type Entry, type ZipFile } from 'yauzl';

import { describeCause } from '../storage/storage-error.js';
import { archiveBytesProblem, COMPRESSION_RATIO_MIN_BYTES, entryCountProblem, entrySizeProblem, type ArchiveLimits } from './archive-limits.js';
import { archiveEntryPath } from './archive-entry-path.js';
import type { InputDocument, SkipListener } from './input-document.js';

/** Host system 3 (Unix) in the upper byte of "version made by": external attributes hold st_mode in their upper 16 bits. */
const MADE_BY_UNIX = 3;
const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

const STORED = 0;
const DEFLATED = 8;

/**
 * Yields the regular files of the zip at `archivePath` as `archivePath!entry/path`, in central directory
 * order, each read into memory before it is yielded; entries that are unsafe or over `limits` go to `skip`.
 */
export async function* zipDocuments(archivePath: string, limits: ArchiveLimits, skip: SkipListener): AsyncGenerator<InputDocument> {
  let zip: ZipFile;
  try {
    // decodeStrings false: with it, yauzl rejects the whole archive at the first unsafe name; names are checked here instead.
    zip = await yauzl.openPromise(archivePath, { lazyEntries: true, validateEntrySizes: true, decodeStrings: false });
  } catch (error) {
    skip(archivePath, `cannot read the zip archive: ${describeCause(error)}`);
    return;
  }
  let count = 0;
  let total = 0;
  try {
    for await (const entry of zip.eachEntry()) {
      const countProblem = entryCountProblem(++count, limits);
      if (countProblem !== undefined) {
        skip(archivePath, countProblem);
        return;
      }
      const name = entryName(entry);
      const kind = entryKind(entry, name);
      if (kind === 'directory') continue;
      const entryPath = archiveEntryPath(name);
      const uri = `${archivePath}!${entryPath.ok ? entryPath.path : name}`;
      if (!entryPath.ok) {
        skip(uri, entryPath.problem);
        continue;
      }
      const problem = kind === 'file' ? contentProblem(entry, limits) : `it is a ${kind}, not a regular file`;
      if (problem !== undefined) {
        skip(uri, problem);
        continue;
      }
      total += entry.uncompressedSize;
      const bytesProblem = archiveBytesProblem(entryPath.path, total, limits);
      if (bytesProblem !== undefined) {
        skip(archivePath, bytesProblem);
        return;
      }
      const bytes = await readEntry(zip, entry).catch((error: unknown) => {
        skip(uri, `cannot read it (the archive is damaged or the entry's declared size is false): ${describeCause(error)}`);
      });
      if (bytes !== undefined) yield { uri, size: bytes.length, bytes: async () => bytes };
    }
  } catch (error) {
    skip(archivePath, `stopped reading it at entry ${count + 1}: the zip archive is damaged: ${describeCause(error)}; any later entries were not read`);
  } finally {
    zip.close();
  }
}

/** The name as the archiver meant it: UTF-8 when flagged or given in an Info-ZIP Unicode path field, CP437 otherwise. */
function entryName(entry: Entry): string {
  return yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, false);
}

type EntryKind = 'file' | 'directory' | 'symbolic link' | 'device, FIFO or socket';

function entryKind(entry: Entry, name: string): EntryKind {
  const madeOnUnix = entry.versionMadeBy >>> 8 === MADE_BY_UNIX;
  const fileType = madeOnUnix ? (entry.externalFileAttributes >>> 16) & S_IFMT : 0;
  if (name.endsWith('/') || fileType === S_IFDIR) return 'directory';
  if (fileType === S_IFLNK) return 'symbolic link';
  // 0: no Unix type recorded (many archivers leave the attributes empty).
  return fileType === 0 || fileType === S_IFREG ? 'file' : 'device, FIFO or socket';
}

/** Why a regular file entry must not be read, or undefined. */
function contentProblem(entry: Entry, limits: ArchiveLimits): string | undefined {
  if (entry.isEncrypted()) return 'it is encrypted; extract it with its password and pass the file itself';
  if (entry.compressionMethod !== STORED && entry.compressionMethod !== DEFLATED) {
    return `its compression method ${entry.compressionMethod} is not supported (only stored and deflate); re-zip it with deflate`;
  }
  const sizeProblem = entrySizeProblem(entry.uncompressedSize, limits);
  if (sizeProblem !== undefined) return sizeProblem;
  const ratio = entry.uncompressedSize / Math.max(entry.compressedSize, 1);
  if (entry.uncompressedSize >= COMPRESSION_RATIO_MIN_BYTES && ratio > limits.maxCompressionRatio) {
    return (
      `its compression ratio ${Math.round(ratio)}:1 is over the limit of ${limits.maxCompressionRatio}:1 ` +
      '(archiveLimits.maxCompressionRatio): a zip bomb, or raise the limit if the archive is trusted'
    );
  }
  return undefined;
}

async function readEntry(zip: ZipFile, entry: Entry): Promise<Buffer> {
  const stream = await zip.openReadStreamPromise(entry);
  return Buffer.concat(await stream.toArray());
}
