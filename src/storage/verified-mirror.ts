// A local copy of the files a SHA256SUMS manifest names under a storage prefix (how `--model
// s3://bucket/models/NAME/` reaches a worker). The manifest is what `sha256sum * > SHA256SUMS` writes
// in the folder before upload. Every file is streamed into a temporary name beside its target while
// it is hashed, checked against the manifest's sha256 and the listing's size, then renamed: a file
// under its final name is always complete and verified. A marker file remembers each verified file by
// the object's ETag and size and the local file's size and mtime, so a restart re-downloads and
// re-hashes nothing that is unchanged. Files of the directory the manifest does not name are removed.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import type { Storage, StoredObject } from './storage.js';
import { StorageError } from './storage-error.js';

export const MANIFEST_NAME = 'SHA256SUMS';
/** In the local directory: what was verified, and against which object. */
export const VERIFIED_MARKER_NAME = '.verified.json';
const PARTIAL_PREFIX = '.partial-';

/** One manifest entry: a file name directly under the prefix and its sha256 (64 lowercase hex digits). */
export interface ManifestEntry {
  name: string;
  sha256: string;
}

export type MirrorEvent =
  | { type: 'listed'; files: number; bytes: number }
  | { type: 'reused'; file: string; bytes: number }
  | { type: 'downloaded'; file: string; bytes: number }
  | { type: 'removed'; file: string };

export interface MirrorSummary {
  downloaded: string[];
  /** Present and verified by an earlier run: neither downloaded nor hashed again. */
  reused: string[];
  bytesDownloaded: number;
}

/** What the marker records per verified file. */
interface VerifiedFile {
  sha256: string;
  /** The object's ETag ('' when the backend has none) and size when it was downloaded. */
  etag: string;
  size: number;
  /** The local file's mtime after its rename: a file changed since then is not trusted. */
  mtimeMs: number;
}

/**
 * Makes `dir` hold exactly the files `storage`'s SHA256SUMS names, each verified. Rejects with a
 * StorageError: 'permanent' when the manifest is missing or malformed, names an object that is not
 * there, or an object does not match it; the storage's own errors otherwise.
 */
export async function mirrorVerified(storage: Storage, dir: string, onEvent: (event: MirrorEvent) => void = () => undefined): Promise<MirrorSummary> {
  const listing = new Map<string, StoredObject>();
  for await (const object of storage.list('')) listing.set(object.key, object);
  if (!listing.has(MANIFEST_NAME)) {
    throw new StorageError(
      'permanent',
      `${storage.url} has no ${MANIFEST_NAME}: in the folder you upload, run \`sha256sum * > ${MANIFEST_NAME}\` and upload ${MANIFEST_NAME} beside the files`,
    );
  }
  const manifest = parseManifest((await storage.get(MANIFEST_NAME)).toString('utf8'), `${storage.url}/${MANIFEST_NAME}`);
  const objects = manifest.map((entry) => {
    const object = listing.get(entry.name);
    if (object === undefined) {
      throw new StorageError('permanent', `${storage.url}/${MANIFEST_NAME} names ${entry.name}, but there is no such object: upload it or fix ${MANIFEST_NAME}`);
    }
    return { entry, object };
  });
  onEvent({ type: 'listed', files: objects.length, bytes: objects.reduce((sum, { object }) => sum + object.size, 0) });

  await mkdir(dir, { recursive: true });
  const verified = await readMarker(dir);
  const summary: MirrorSummary = { downloaded: [], reused: [], bytesDownloaded: 0 };
  for (const { entry, object } of objects) {
    const target = path.join(dir, entry.name);
    if (await stillVerified(target, verified[entry.name], entry, object)) {
      summary.reused.push(entry.name);
      onEvent({ type: 'reused', file: entry.name, bytes: object.size });
      continue;
    }
    delete verified[entry.name];
    await downloadVerified(storage, entry, object, target);
    verified[entry.name] = { sha256: entry.sha256, etag: object.etag ?? '', size: object.size, mtimeMs: (await stat(target)).mtimeMs };
    await writeMarker(dir, verified);
    summary.downloaded.push(entry.name);
    summary.bytesDownloaded += object.size;
    onEvent({ type: 'downloaded', file: entry.name, bytes: object.size });
  }
  const named = new Set(manifest.map((entry) => entry.name));
  for (const name of Object.keys(verified)) if (!named.has(name)) delete verified[name];
  await writeMarker(dir, verified);
  for (const file of await readdir(dir, { withFileTypes: true })) {
    if (!file.isFile() || file.name.startsWith('.') || named.has(file.name)) continue;
    await rm(path.join(dir, file.name), { force: true });
    onEvent({ type: 'removed', file: file.name });
  }
  return summary;
}

/**
 * The entries of a `sha256sum` output: '<64 hex> <space or *><name>' per line. The manifest's own
 * line (present when it was written over an older one) is left out; names must be plain file names.
 */
export function parseManifest(text: string, source: string): ManifestEntry[] {
  const entries: ManifestEntry[] = [];
  const names = new Set<string>();
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const match = /^([0-9a-fA-F]{64}) [ *](.+)$/.exec(line.replace(/\r$/, ''));
    if (match === null) {
      throw new StorageError('permanent', `${source} line ${i + 1} is not "<sha256> <file name>" as sha256sum writes it: ${JSON.stringify(line.slice(0, 120))}`);
    }
    const name = match[2];
    if (name === MANIFEST_NAME) return;
    if (name.includes('/') || name.includes('\\') || name.startsWith('.')) {
      throw new StorageError('permanent', `${source} line ${i + 1} names ${JSON.stringify(name)}: only plain file names directly beside ${MANIFEST_NAME} are allowed`);
    }
    if (names.has(name)) throw new StorageError('permanent', `${source} names ${name} twice`);
    names.add(name);
    entries.push({ name, sha256: match[1].toLowerCase() });
  });
  if (entries.length === 0) throw new StorageError('permanent', `${source} names no file`);
  return entries;
}

async function stillVerified(target: string, record: VerifiedFile | undefined, entry: ManifestEntry, object: StoredObject): Promise<boolean> {
  if (record === undefined) return false;
  const local = await stat(target).catch(() => undefined);
  return (
    local !== undefined &&
    record.sha256 === entry.sha256 &&
    record.etag === (object.etag ?? '') &&
    record.size === object.size &&
    local.size === object.size &&
    local.mtimeMs === record.mtimeMs
  );
}

async function downloadVerified(storage: Storage, entry: ManifestEntry, object: StoredObject, target: string): Promise<void> {
  const partial = path.join(path.dirname(target), `${PARTIAL_PREFIX}${process.pid}-${entry.name}`);
  const hash = createHash('sha256');
  let size = 0;
  const measure = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  try {
    await pipeline(await storage.getStream(entry.name), measure, createWriteStream(partial));
    const sha256 = hash.digest('hex');
    if (size !== object.size) {
      throw new StorageError('transient', `${storage.url}/${entry.name}: received ${size} bytes, the listing says ${object.size}; try again`);
    }
    if (sha256 !== entry.sha256) {
      throw new StorageError(
        'permanent',
        `${storage.url}/${entry.name} does not match ${MANIFEST_NAME}: its sha256 is ${sha256}, the manifest says ${entry.sha256}; ` +
          `upload the file again or write ${MANIFEST_NAME} anew from the files you uploaded`,
      );
    }
    await rename(partial, target);
  } finally {
    await rm(partial, { force: true });
  }
}

async function readMarker(dir: string): Promise<Record<string, VerifiedFile>> {
  try {
    const parsed: unknown = JSON.parse(await readFile(path.join(dir, VERIFIED_MARKER_NAME), 'utf8'));
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, VerifiedFile>) : {};
  } catch {
    return {}; // none yet, or damaged: every file is verified again
  }
}

async function writeMarker(dir: string, verified: Record<string, VerifiedFile>): Promise<void> {
  const marker = path.join(dir, VERIFIED_MARKER_NAME);
  const partial = `${marker}${PARTIAL_PREFIX}${process.pid}`;
  await writeFile(partial, `${JSON.stringify(verified, null, 2)}\n`);
  await rename(partial, marker);
}
