// Which storage a queue command uses: the command's flag, else $SCRIPTORIUM_STORAGE, else a folder
// in the working directory. Producers and workers must name the same storage: jobs carry its URL,
// and a worker of another storage leaves them for a worker of theirs (queue/storage-affinity.ts).
import { openStorage } from '../storage/open-storage.js';
import type { Storage } from '../storage/storage.js';

export const DEFAULT_STORAGE = './scriptorium-data';

export const STORAGE_URL_USAGE = `file:///abs/dir, a directory path or s3://bucket/prefix; default $SCRIPTORIUM_STORAGE, else ${DEFAULT_STORAGE}`;

export function openCommandStorage(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): Storage {
  return openStorage(flag ?? (env.SCRIPTORIUM_STORAGE?.trim() || DEFAULT_STORAGE));
}
