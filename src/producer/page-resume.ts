// Page-level resume: a document whose earlier run was interrupted, or had failed pages, is queued
// again with only the page jobs that still have work. Whether a page is done is read from storage
// (results/<docId>/pages/<nnnn>.json, listed once per document), which outlives Redis.
import type { PageJobData } from '../jobs/job-types.js';
import { pageResultKey, pageResultsFolder } from '../jobs/storage-layout.js';
import type { Storage } from '../storage/storage.js';

/** The jobs of `pageJobs` (one document's) that cover at least one page without a stored result. */
export async function pageJobsWithoutResults(docId: string, pageJobs: readonly PageJobData[], storage: Storage): Promise<PageJobData[]> {
  const stored = new Set<string>();
  for await (const object of storage.list(pageResultsFolder(docId))) stored.add(object.key);
  if (stored.size === 0) return [...pageJobs];
  return pageJobs.filter((job) => {
    for (let page = job.firstPage; page <= job.lastPage; page++) {
      if (!stored.has(pageResultKey(docId, page, 'json'))) return true;
    }
    return false;
  });
}
