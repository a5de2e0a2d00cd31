// Regular files below a directory, depth first, in the lexical (UTF-8 byte) order of their paths
// relative to it, the order an S3 listing of the same tree would have. Symbolic links inside the tree
// are not followed: one pointing out would leave the tree, one pointing in would list a file twice.
import type { Dirent } from 'node:fs';
import { readdir, readlink, stat } from 'node:fs/promises';
import path from 'node:path';

import { describeCause } from '../storage/storage-error.js';
import type { SkipListener } from './input-document.js';

export interface WalkedFile {
  /** `directory` joined with the file's relative path. */
  path: string;
  size: number;
}

export async function* walkDirectory(directory: string, skip: SkipListener): AsyncGenerator<WalkedFile> {
  let entries: Dirent[];
  try {
    entries = await readdir(directory, { withFileTypes: true });
  } catch (error) {
    skip(directory, `cannot list the directory: ${describeCause(error)}`);
    return;
  }
  for (const entry of entries.sort(byPathOrder)) {
    const entryPath = path.join(directory, entry.name);
    if (entry.isDirectory()) {
      yield* walkDirectory(entryPath, skip);
    } else if (entry.isFile()) {
      // The file may go away between listing and stat: reported like any unreadable input.
      const size = await stat(entryPath).then(
        (stats) => stats.size,
        (error: unknown) => skip(entryPath, `cannot read it: ${describeCause(error)}`),
      );
      if (size !== undefined) yield { path: entryPath, size };
    } else if (entry.isSymbolicLink()) {
      const target = await readlink(entryPath).catch(() => 'an unreadable target');
      skip(entryPath, `symbolic link to ${target} not followed; pass its target as an input of its own`);
    } else {
      skip(entryPath, 'it is a device, FIFO or socket, not a regular file');
    }
  }
}

/** A directory sorts as 'name/', so that 'a.pdf' < 'a/…' < 'a0.pdf' as in the relative paths. */
function byPathOrder(a: Dirent, b: Dirent): number {
  return Buffer.compare(Buffer.from(sortName(a)), Buffer.from(sortName(b)));
}

function sortName(entry: Dirent): string {
  return entry.isDirectory() ? `${entry.name}/` : entry.name;
}
