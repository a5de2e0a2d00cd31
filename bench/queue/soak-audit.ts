// The soak's audit (soak.ts): over storage, every page of every document exactly once (done with its
// result, or failed with a reason and without one) and every document assembled exactly once; over
// Redis, no job left unfinished; over the worker processes' sampled memory, none that kept growing.
import { Queue } from 'bullmq';

import { RESULTS_FOLDER, docIdOfDoneMarker, docIdOfFailedPagesMarker, documentResultKeys, pageAttemptsFolder, pageResultKey, pageResultsFolder } from '../../src/jobs/storage-layout.js';
import { DOCUMENTS, pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { UNFINISHED_DOCUMENT_STATES } from '../../src/queue/work-left.js';
import type { Storage } from '../../src/storage/storage.js';
import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';

export interface SoakDocument {
  docId: string;
  pages: number;
}

/**
 * How many times a document's assembly wrote each marker: every assembly ends with one, _DONE or
 * _FAILED_PAGES (document-assembler.ts). Counted from the S3 server's own notifications, so an
 * assembly counts whatever became of the worker that ran it.
 */
export interface MarkerWrites {
  done: number;
  failedPages: number;
}

/** Counts the marker an object stored under `key` is, if it is one, by docId. */
export function countMarkerWrite(markers: Map<string, MarkerWrites>, key: string): void {
  const done = docIdOfDoneMarker(key);
  const docId = done ?? docIdOfFailedPagesMarker(key);
  if (docId === undefined) return;
  const writes = markers.get(docId) ?? { done: 0, failedPages: 0 };
  if (done === undefined) writes.failedPages++;
  else writes.done++;
  markers.set(docId, writes);
}

export interface ResultsAudit {
  donePages: number;
  failedPages: number;
  /** How many failed pages gave each reason. */
  reasons: Map<string, number>;
  /** Page JSONs of tries never committed nor removed (a worker lost its lock, then could not reach Redis): no results, only litter. */
  leftAttempts: number;
  problems: string[];
}

/** Checks each document's document.json and page results in storage, and the markers its assemblies wrote (by docId). */
export async function auditResults(documents: readonly SoakDocument[], storage: Storage, markers: ReadonlyMap<string, MarkerWrites>): Promise<ResultsAudit> {
  const audit: ResultsAudit = { donePages: 0, failedPages: 0, reasons: new Map(), leftAttempts: 0, problems: [] };
  const problem = (docId: string, text: string) => audit.problems.push(`${docId}: ${text}`);
  // Every stored page result, listed once: a listing per document costs a walk of the results
  // folder each on a file-backed S3 server, hours for 100,000 pages.
  const byFolder = new Map<string, Set<string>>();
  for await (const { key } of storage.list(RESULTS_FOLDER, { recursive: true })) {
    if (!key.endsWith('.json')) continue;
    const folder = key.slice(0, key.lastIndexOf('/') + 1);
    byFolder.set(folder, (byFolder.get(folder) ?? new Set()).add(key));
  }
  for (const { docId, pages } of documents) {
    const { done, failedPages } = markers.get(docId) ?? { done: 0, failedPages: 0 };
    if (done + failedPages !== 1) problem(docId, `assembled ${done + failedPages} times (_DONE written ${done} times, _FAILED_PAGES ${failedPages})`);
    let document: { pages: Array<{ page: number }>; failedPages: Array<{ page: number; reason: string }> };
    try {
      document = JSON.parse((await storage.get(documentResultKeys(docId).json)).toString('utf8'));
    } catch (error) {
      problem(docId, `no readable document.json (${(error as Error).message})`);
      continue;
    }
    const stored = byFolder.get(pageResultsFolder(docId)) ?? new Set<string>();
    const listed = [...document.pages, ...document.failedPages].map(({ page }) => page).sort((a, b) => a - b);
    const expected = Array.from({ length: pages }, (_, i) => i + 1);
    if (listed.join() !== expected.join()) problem(docId, `document.json lists pages ${listed.join(',')}, not 1…${pages} once each`);
    for (const { page } of document.pages) {
      audit.donePages++;
      if (!stored.has(pageResultKey(docId, page, 'json'))) problem(docId, `page ${page} is listed done but has no result`);
    }
    for (const { page, reason } of document.failedPages) {
      audit.failedPages++;
      audit.reasons.set(reason, (audit.reasons.get(reason) ?? 0) + 1);
      if (!reason) problem(docId, `page ${page} failed without a reason`);
      if (stored.has(pageResultKey(docId, page, 'json'))) problem(docId, `page ${page} is reported failed but its result exists`);
    }
    if (stored.size !== document.pages.length) problem(docId, `${stored.size} page results stored for ${document.pages.length} pages done`);
    audit.leftAttempts += byFolder.get(pageAttemptsFolder(docId))?.size ?? 0;
  }
  return audit;
}

/**
 * The queues (documents and the variants' pages) still holding unfinished jobs, each with its counts;
 * waits up to waitMs for them to drain (a killed worker's jobs wait out their lock first).
 */
export async function undrainedQueues(redisUrl: string, variants: readonly Variant[], waitMs: number): Promise<string[]> {
  const connection = redisOptions(redisUrl, 'client');
  const queues = [DOCUMENTS, ...variants.map((variant) => pageQueue(variant))].map(({ name, prefix }) => new Queue(name, { connection, prefix }));
  const deadline = Date.now() + waitMs;
  try {
    for (;;) {
      const left: string[] = [];
      for (const queue of queues) {
        const counts = await queue.getJobCounts(...UNFINISHED_DOCUMENT_STATES);
        const unfinished = Object.entries(counts).filter(([, count]) => count > 0);
        if (unfinished.length > 0) left.push(`queue ${queue.name} is not drained: ${unfinished.map(([state, count]) => `${count} ${state}`).join(', ')}`);
      }
      if (left.length === 0 || Date.now() >= deadline) return left;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  } finally {
    await Promise.all(queues.map((queue) => queue.close()));
  }
}

/**
 * Memory that kept growing: samples (MiB) of a process whose last is over 1.25 × the largest it
 * reached in its warm-up (its first warmUpSamples samples); undefined otherwise. A process is judged
 * only once it has lived judgedAfterSamples past its warm-up: one killed while still warming up shows
 * a rise that says nothing about growth.
 */
export function memoryGrowth(
  mib: readonly number[],
  { warmUpSamples, judgedAfterSamples }: { warmUpSamples: number; judgedAfterSamples: number },
): { warmedUp: number; last: number } | undefined {
  if (mib.length < warmUpSamples + judgedAfterSamples) return undefined;
  const warmedUp = Math.max(...mib.slice(0, warmUpSamples));
  const last = mib.at(-1)!;
  return last > 1.25 * warmedUp ? { warmedUp, last } : undefined;
}
