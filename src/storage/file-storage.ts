// file:// backend: one file per key below a root directory ('/' in a key is a directory level).
// Writes go to a temporary file in the target's directory, are flushed to disk, then renamed over
// the final name, so a reader sees either the old object or the complete new one, never a part.
// Only regular files and directories count: symbolic links below the root are not listed. Folders
// exist only to hold objects, as in S3: one that a delete leaves empty is removed.
// Conditional writes (putIfUnchanged) rest on two atomic file system steps: link() fails when the
// name exists (a create), and of processes renaming one file away only one succeeds (a replace
// takes the object read aside, checks it, then links the new one in). While a replace checks, the
// object is briefly missing to readers, and a create that comes exactly then wins over the replace.
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, type Dirent } from 'node:fs';
import { link, mkdir, open, readFile, readdir, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';

import type { ListOptions, Storage, StoredObject, VersionedObject } from './storage.js';
import { describeCause, existsBy, StorageError } from './storage-error.js';
import { checkKey, checkPrefix } from './storage-key.js';

/** File names starting with this are writes in progress (or left by a crash): never listed, and reserved. */
const PARTIAL_FILE_PREFIX = '.storage-partial-';

/** Errors that may go away on their own (too many open files, a busy or interrupted call). */
const TRANSIENT_FS_CODES = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'EINTR']);

/** Codes that mean "no object under this key" when reading (ENOTDIR/EISDIR: a key and a prefix collide). */
const MISSING_FS_CODES = new Set(['ENOENT', 'ENOTDIR', 'EISDIR']);

export class FileStorage implements Storage {
  readonly url: string;
  /** Absolute path of the directory holding the objects; created on the first put. */
  readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
    this.url = pathToFileURL(this.root).href;
  }

  /** Content types are not stored on file://, so put takes no options. */
  async put(key: string, body: Buffer | Readable): Promise<void> {
    const { target, partial } = await this.writePartial(key, body);
    try {
      await rename(partial, target);
    } catch (error) {
      await rm(partial, { force: true });
      throw this.writeError(error, key);
    }
  }

  async putIfUnchanged(key: string, body: Buffer, expected: string | null): Promise<void> {
    const { target, partial } = await this.writePartial(key, body);
    try {
      if (expected === null) {
        await this.linkNew(partial, target, key, 'an object is there now');
        return;
      }
      const aside = this.partialPathBeside(target);
      try {
        await rename(target, aside);
      } catch (error) {
        if (MISSING_FS_CODES.has(errorCode(error))) throw this.conflict(key, 'the object is gone');
        throw error;
      }
      try {
        // A folder moved aside (the key is now a prefix of other keys) goes back as it was.
        const moved = await readFile(aside).catch(async (error: unknown) => {
          await rename(aside, target);
          throw error;
        });
        if (versionOf(moved) !== expected) {
          await link(aside, target).catch(() => undefined); // put back; a create in the meantime keeps its object
          throw this.conflict(key, `it is no longer the object ${expected}`);
        }
        await this.linkNew(partial, target, key, 'another write created it while this one checked');
      } finally {
        await rm(aside, { force: true });
      }
    } catch (error) {
      throw this.writeError(error, key);
    } finally {
      await rm(partial, { force: true });
    }
  }

  async get(key: string): Promise<Buffer> {
    try {
      return await readFile(this.pathOf(key));
    } catch (error) {
      throw this.readError(error, 'get', key);
    }
  }

  async getVersioned(key: string): Promise<VersionedObject> {
    const body = await this.get(key);
    return { body, version: versionOf(body) };
  }

  async getStream(key: string): Promise<Readable> {
    const file = this.pathOf(key);
    try {
      // Opened here so that a missing object rejects this call instead of failing the stream later.
      const handle = await open(file, 'r');
      if (!(await handle.stat()).isFile()) {
        await handle.close();
        throw this.notFound('getStream', key);
      }
      return handle.createReadStream();
    } catch (error) {
      throw this.readError(error, 'getStream', key);
    }
  }

  exists(key: string): Promise<boolean> {
    return existsBy(() => this.statFile(key, 'exists'));
  }

  async delete(key: string): Promise<void> {
    const file = this.pathOf(key);
    try {
      await unlink(file);
    } catch (error) {
      if (MISSING_FS_CODES.has(errorCode(error))) return;
      throw this.error(error, 'delete', key);
    }
    // Up to the root, each folder left empty; the first that is not (or is gone already) ends it.
    for (let folder = path.dirname(file); folder.startsWith(`${this.root}${path.sep}`); folder = path.dirname(folder)) {
      try {
        await rmdir(folder);
      } catch {
        return;
      }
    }
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<StoredObject> {
    checkPrefix(prefix);
    // 'a/b/c' lists the directory 'a/b/' for names starting with 'c', like an S3 prefix.
    const directoryKey = prefix.slice(0, prefix.lastIndexOf('/') + 1);
    yield* this.listDirectory(directoryKey, prefix.slice(directoryKey.length), options.recursive ?? false);
  }

  stat(key: string): Promise<StoredObject> {
    return this.statFile(key, 'stat');
  }

  /**
   * Yields the files of one directory whose names start with `namePrefix`, descending into
   * subdirectories when `recursive`. Entries are sorted with directories as 'name/', which makes
   * the depth-first walk produce keys in the same UTF-8 byte order as an S3 listing.
   */
  private async *listDirectory(directoryKey: string, namePrefix: string, recursive: boolean): AsyncGenerator<StoredObject> {
    let entries: Dirent[];
    try {
      entries = await readdir(path.join(this.root, directoryKey), { withFileTypes: true });
    } catch (error) {
      if (MISSING_FS_CODES.has(errorCode(error))) return;
      throw this.error(error, 'list', directoryKey + namePrefix);
    }
    const listed = entries
      .filter((entry) => entry.name.startsWith(namePrefix) && !entry.name.startsWith(PARTIAL_FILE_PREFIX))
      .filter((entry) => entry.isFile() || (recursive && entry.isDirectory()))
      .map((entry) => ({ entry, sortName: Buffer.from(entry.isDirectory() ? `${entry.name}/` : entry.name) }))
      .sort((a, b) => Buffer.compare(a.sortName, b.sortName));
    for (const { entry } of listed) {
      const key = directoryKey + entry.name;
      if (entry.isDirectory()) {
        yield* this.listDirectory(`${key}/`, '', true);
        continue;
      }
      try {
        const stats = await stat(path.join(this.root, key));
        yield { key, size: stats.size, lastModified: stats.mtime };
      } catch (error) {
        if (errorCode(error) !== 'ENOENT') throw this.error(error, 'list', key); // ENOENT: deleted while listing
      }
    }
  }

  private async statFile(key: string, operation: string): Promise<StoredObject> {
    try {
      const stats = await stat(this.pathOf(key));
      if (!stats.isFile()) throw this.notFound(operation, key); // a directory: only a prefix of other keys
      return { key, size: stats.size, lastModified: stats.mtime };
    } catch (error) {
      throw this.readError(error, operation, key);
    }
  }

  /** Writes `body` to a fresh partial file in the target's folder, flushed to disk, for a rename or link to publish. */
  private async writePartial(key: string, body: Buffer | Readable): Promise<{ target: string; partial: string }> {
    const target = this.pathOf(key);
    const directory = path.dirname(target);
    const partial = this.partialPathBeside(target);
    try {
      // The pipeline takes hold of the body at once, so a source that fails while the directory is
      // being created rejects this put instead of raising an unhandled 'error' event.
      await pipeline(Buffer.isBuffer(body) ? [body] : body, async (source: AsyncIterable<Buffer>) => {
        await createPartialFile(directory, partial);
        // flush: the data is on disk before a rename or link publishes it.
        await pipeline(source, createWriteStream(partial, { flags: 'r+', flush: true }));
      });
      return { target, partial };
    } catch (error) {
      await rm(partial, { force: true });
      throw this.writeError(error, key);
    }
  }

  private partialPathBeside(target: string): string {
    return path.join(path.dirname(target), `${PARTIAL_FILE_PREFIX}${randomBytes(8).toString('hex')}`);
  }

  /** Publishes `partial` under `target` only where nothing is: link() refuses an existing name. */
  private async linkNew(partial: string, target: string, key: string, found: string): Promise<void> {
    try {
      await link(partial, target);
    } catch (error) {
      if (errorCode(error) === 'EEXIST') throw this.conflict(key, found);
      throw error;
    }
  }

  private conflict(key: string, found: string): StorageError {
    return new StorageError('conflict', `put ${JSON.stringify(key)} in ${this.url}: ${found}; read it again before writing`, { key });
  }

  private pathOf(key: string): string {
    const segments = checkKey(key).split('/');
    if (segments.some((segment) => segment.startsWith(PARTIAL_FILE_PREFIX))) {
      throw new StorageError(
        'permanent',
        `invalid storage key ${JSON.stringify(key)}: names starting with '${PARTIAL_FILE_PREFIX}' are reserved for writes in progress in file storage; rename the key`,
        { key },
      );
    }
    return path.join(this.root, ...segments);
  }

  private notFound(operation: string, key: string, cause?: unknown): StorageError {
    return new StorageError('not_found', `${operation} ${JSON.stringify(key)}: no such object in ${this.url}; check the key and the storage URL`, {
      key,
      cause,
    });
  }

  private readError(error: unknown, operation: string, key: string): StorageError {
    if (error instanceof StorageError) return error;
    if (MISSING_FS_CODES.has(errorCode(error))) return this.notFound(operation, key, error);
    return this.error(error, operation, key);
  }

  private writeError(error: unknown, key: string): StorageError {
    if (error instanceof StorageError) return error;
    const code = errorCode(error);
    if (code === 'ENOTDIR' || code === 'EEXIST' || code === 'EISDIR') {
      return new StorageError(
        'permanent',
        `put ${JSON.stringify(key)} in ${this.url}: the key and another object's key collide as file and directory ` +
          `(in file storage 'a' and 'a/b' cannot both exist); choose keys where no key is a prefix directory of another`,
        { key, cause: error },
      );
    }
    return this.error(error, 'put', key);
  }

  private error(error: unknown, operation: string, key: string): StorageError {
    if (error instanceof StorageError) return error;
    const code = errorCode(error);
    return new StorageError(
      TRANSIENT_FS_CODES.has(code) ? 'transient' : 'permanent',
      `${operation} ${JSON.stringify(key)} in ${this.url} failed: ${describeCause(error)}; ${this.adviceFor(code)}`,
      { key, cause: error },
    );
  }

  private adviceFor(code: string): string {
    if (TRANSIENT_FS_CODES.has(code)) return 'retry later';
    if (code === 'EACCES' || code === 'EPERM') return `give this process access to ${this.root} or choose another storage root`;
    if (code === 'EROFS') return `${this.root} is on a read-only file system; choose another storage root`;
    if (code === 'ENOSPC' || code === 'EDQUOT') return `free space on the disk holding ${this.root}`;
    return 'check the storage root and the source of the data';
  }
}

/** A file's version: the MD5 of its bytes, as S3 reports for objects put whole. */
function versionOf(body: Buffer): string {
  return createHash('md5').update(body).digest('hex');
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/**
 * Creates the empty partial file ('wx': its name is ours alone) and the folders above it. A delete
 * removes a folder it leaves empty, possibly between our mkdir and open: then the folder is made again.
 */
async function createPartialFile(directory: string, partial: string): Promise<void> {
  for (let tries = 1; ; tries++) {
    try {
      await mkdir(directory, { recursive: true });
      await (await open(partial, 'wx')).close();
      return;
    } catch (error) {
      if (errorCode(error) !== 'ENOENT' || tries === 3) throw error;
    }
  }
}
