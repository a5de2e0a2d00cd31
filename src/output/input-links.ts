// Results found by input name. With file storage, `run` and `enqueue --wait` link each document's
// results folder at by-input/<name>, where the name is the input's path below the argument it came
// from: `run samples --out out` gives out/by-input/samples/sample.pdf/document.md. The links are for
// people only: the pipeline never reads them, and file storage does not list symbolic links.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';

import { inputLinkKey, resultsFolder } from '../jobs/storage-layout.js';
import { FileStorage } from '../storage/file-storage.js';
import { isS3Url } from '../storage/s3-url.js';
import type { Storage } from '../storage/storage.js';

/** Separates an archive's path from the entry's path in a document's uri (producer/zip-documents.ts). */
const ARCHIVE_ENTRY_SEPARATOR = '!';

/**
 * The link name of the document read from `uri`, one of whose `inputs` (the command's arguments)
 * named it: the argument's last segment, then the document's path below it, an archive's entries
 * below the archive's name.
 *   inputs ['samples'],          uri '/home/me/samples/a/b.pdf'      → 'samples/a/b.pdf'
 *   inputs ['/data/scans.zip'],  uri '/data/scans.zip!2026/p.tiff'   → 'scans.zip/2026/p.tiff'
 *   inputs ['s3://bucket/inbox/'], uri 's3://bucket/inbox/x.pdf'     → 'inbox/x.pdf'
 * A uri no argument names keeps all of itself, less its scheme and root.
 */
export function inputLinkName(uri: string, inputs: readonly string[], cwd = process.cwd()): string {
  for (const input of inputs) {
    const argument = isS3Url(input) ? input.replace(/\/+$/, '') : path.resolve(cwd, input);
    const below = uri.slice(argument.length);
    if (uri.startsWith(argument) && (below === '' || below.startsWith('/') || below.startsWith(ARCHIVE_ENTRY_SEPARATOR))) {
      return linkPath(`${lastSegment(argument)}/${below.slice(1)}`);
    }
  }
  return linkPath(uri.replace(/^s3:\/\//, ''));
}

/**
 * Links by-input/<name> to results/<docId>/ below the storage root, replacing an older link of that
 * name; resolves with the link's path, or undefined when the storage is not file storage. Rejects
 * when the name is taken by something other than a link.
 */
export async function linkResultsByInput(storage: Storage, name: string, docId: string): Promise<string | undefined> {
  if (!(storage instanceof FileStorage)) return undefined;
  const link = path.join(storage.root, inputLinkKey(name));
  const target = path.relative(path.dirname(link), path.join(storage.root, resultsFolder(docId)));
  await mkdir(path.dirname(link), { recursive: true });
  // A new link renamed over the old one: a reader sees one of the two, never none.
  const partial = `${link}.link-${randomBytes(4).toString('hex')}`;
  await symlink(target, partial, 'dir');
  try {
    await rename(partial, link);
  } catch (error) {
    await unlink(partial).catch(() => undefined);
    throw error;
  }
  return link;
}

function lastSegment(argument: string): string {
  return argument.split(/[/!]/).filter((segment) => segment !== '').at(-1) ?? '';
}

/** '/'-separated segments, archive separators as folders; empty, '.' and '..' segments dropped, backslashes made '_'. */
function linkPath(name: string): string {
  return name
    .split(/[/!]/)
    .filter((segment) => segment !== '' && segment !== '.' && segment !== '..')
    .map((segment) => segment.replace(/\\/g, '_'))
    .join('/');
}
