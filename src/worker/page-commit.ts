// A page job's pages become the pages' results only once the queue has recorded the job's
// completion, which BullMQ grants only to the worker still holding the job's lock. So a try writes
// its pages under keys of its own (results/<docId>/attempts/<nnnn>-<attempt id>.json and .md), and
// whoever sees the completion (the worker that completed the job, else the document's assembler,
// whichever comes first) copies them to results/<docId>/pages/ and removes them.
//
// Why: a worker that lost a job's lock while alive (its event loop or Redis too slow for the lock)
// still finishes the page, possibly after another worker took the job over, or after the job's
// tries ran out and its document was assembled listing the page failed. Were it to write the page's
// result itself, a failed page would have a result; written under its attempt's keys, it never
// becomes one. It removes them itself when it finds it lost the lock, and an assembly removes what
// killed workers left.
import { pageAttemptsFolder } from '../jobs/storage-layout.js';
import type { StoredPage } from '../jobs/job-types.js';
import type { Storage } from '../storage/storage.js';
import { StorageError } from '../storage/storage-error.js';

export const PAGE_MARKDOWN_TYPE = 'text/markdown; charset=utf-8';
export const PAGE_JSON_TYPE = 'application/json';

/**
 * Makes each page's attempt its result: its markdown, then its JSON (a page JSON in storage means its
 * markdown is there too), then removes the attempt's copies. Committing twice, or concurrently, is
 * harmless: an attempt already removed was committed by someone else.
 */
export async function commitStoredPages(pages: readonly StoredPage[], storage: Storage): Promise<void> {
  await Promise.all(pages.map((page) => commitStoredPage(page, storage)));
}

async function commitStoredPage({ key, markdownKey, attempt }: StoredPage, storage: Storage): Promise<void> {
  if (attempt === undefined) return;
  let json: Buffer;
  let markdown: Buffer;
  try {
    [json, markdown] = await Promise.all([storage.get(attempt.key), storage.get(attempt.markdownKey)]);
  } catch (error) {
    if (error instanceof StorageError && error.code === 'not_found') return;
    throw error;
  }
  await storage.put(markdownKey, markdown, { contentType: PAGE_MARKDOWN_TYPE });
  await storage.put(key, json, { contentType: PAGE_JSON_TYPE });
  await discardAttempts([{ attempt }], storage);
}

/** Removes what tries wrote for these pages, committed or not. */
export async function discardAttempts(pages: ReadonlyArray<Pick<StoredPage, 'attempt'>>, storage: Storage): Promise<void> {
  await Promise.all(pages.flatMap(({ attempt }) => (attempt === undefined ? [] : [storage.delete(attempt.key), storage.delete(attempt.markdownKey)])));
}

/**
 * Removes every attempt left under a document (by killed workers, or by workers that lost their
 * locks), once its pages have settled and are committed; resolves with how many objects it removed.
 */
export async function removeLeftAttempts(docId: string, storage: Storage): Promise<number> {
  const left: string[] = [];
  for await (const { key } of storage.list(pageAttemptsFolder(docId))) left.push(key);
  await Promise.all(left.map((key) => storage.delete(key)));
  return left.length;
}
