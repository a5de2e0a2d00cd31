// Where one document stands, for GET /v1/documents/{docId}: from its document job while Redis holds
// it (page counts from the job's settled children), else from its document.json in storage, which
// outlives the jobs. A docId known to neither is unknown.
import type { Queue } from 'bullmq';

import type { Variant } from '../vocabulary/ocr-vocabulary.js';
import type { DocumentJobData, OcrJobOptions } from '../jobs/job-types.js';
import type { DocumentResultJson } from '../jobs/result-json.js';
import { documentResultKeys, isDocId } from '../jobs/storage-layout.js';
import { documentJobId } from '../queue/job-ids.js';
import { pageQueue } from '../queue/queue-names.js';
import { pageKind, recentThroughput } from '../queue/throughput.js';
import { timeLeft, UNFINISHED_PAGE_STATES } from '../queue/work-left.js';
import type { Storage } from '../storage/storage.js';
import { StorageError } from '../storage/storage-error.js';
import { pageStatusesOf } from '../worker/document-worker.js';
import type { DocumentLinks, DocumentStatus } from './api-types.js';
import { HttpError } from './http-error.js';
import type { RedisClient } from '../queue/redis.js';

/** The rate behind the ETA: pages completed over this many minutes. */
const ETA_WINDOW_MINUTES = 10;

export interface DocumentStatusSources {
  documents: Queue;
  /** The page queue of a variant's documents. */
  pages: (variant: Variant) => Queue;
  /** A `client` connection, for the throughput counters. */
  redis: RedisClient;
  storage: Storage;
}

/** The document's status, or undefined when no job and no result is known for it. */
export async function documentStatus(docId: string, sources: DocumentStatusSources): Promise<DocumentStatus | undefined> {
  const links = documentLinks(docId);
  const job = await sources.documents.getJob(documentJobId(docId));
  const state = job === undefined ? undefined : await job.getState();
  if (job === undefined || state === 'completed' || state === 'unknown') {
    const document = await settledDocument(docId, sources.storage);
    return document === undefined ? undefined : settledStatus(document, links);
  }
  const data = job.data as DocumentJobData;
  const statuses = await pageStatusesOf(job);
  const done = new Set(statuses.filter((status) => status.status === 'done').map((status) => status.page));
  const failedPages = statuses.flatMap((status) => (status.status === 'failed' && !done.has(status.page) ? [{ page: status.page, reason: status.reason }] : []));
  const flaggedPages = statuses
    .flatMap((status) => (status.status === 'done' && status.flags !== undefined && status.flags.length > 0 ? [{ page: status.page, flags: status.flags }] : []))
    .sort((a, b) => a.page - b.page);
  const pending = data.pageCount - done.size - failedPages.length;
  const pages = { total: data.pageCount, done: done.size, failed: failedPages.length, pending, flagged: flaggedPages.length };
  if (state === 'failed') return { docId, state: 'failed', pages, failedPages, flaggedPages, reason: job.failedReason, etaSeconds: null, links };
  const settledPages = done.size + failedPages.length;
  return { docId, state: settledPages === 0 ? 'queued' : 'running', pages, failedPages, flaggedPages, etaSeconds: await queueEtaSeconds(data.options, sources), links };
}

const SETTLED_STATES = new Set<DocumentStatus['state']>(['completed', 'partial', 'failed']);

/** Whether the document changes no more (until it is retried). */
export function isSettled(status: DocumentStatus): boolean {
  return SETTLED_STATES.has(status.state);
}

/** The API paths of a document. */
export function documentLinks(docId: string): DocumentLinks {
  const self = `/v1/documents/${docId}`;
  return { self, result: `${self}/result`, events: `${self}/events` };
}

/** Checks the form of a docId from a path: 400 for anything else. */
export function checkedDocId(docId: string): string {
  if (!isDocId(docId)) throw new HttpError(400, `"${docId}" is no docId: a docId is 32 lowercase hex digits, as a submission answers`);
  return docId;
}

/** The document's document.json, once assembled; undefined before. */
export async function settledDocument(docId: string, storage: Storage): Promise<DocumentResultJson | undefined> {
  const keys = documentResultKeys(docId);
  try {
    return JSON.parse((await storage.get(keys.json)).toString('utf8')) as DocumentResultJson;
  } catch (error) {
    if (error instanceof StorageError && error.code === 'not_found') return undefined;
    throw error;
  }
}

function settledStatus(document: DocumentResultJson, links: DocumentLinks): DocumentStatus {
  const { failedPages } = document;
  // Documents assembled by earlier versions list no flagged pages.
  const flaggedPages = document.flagged ?? [];
  const pages = { total: document.source.pages, done: document.pages.length, failed: failedPages.length, pending: 0, flagged: flaggedPages.length };
  return { docId: document.docId, state: failedPages.length === 0 ? 'completed' : 'partial', pages, failedPages, flaggedPages, etaSeconds: null, links };
}

/**
 * The document's page queue drained at the recent rate of its kind of page, by the rule of
 * work-left.ts: none while no worker is connected to the queue or without a recent rate; 0 once the
 * queue holds nothing unfinished. The queue counts as one kind: reading the kind of every queued job
 * on each status request would read every job.
 */
async function queueEtaSeconds(options: OcrJobOptions, { pages, redis }: DocumentStatusSources): Promise<number | null> {
  const queue = pages(options.variant);
  const [counts, { perMinute }, workers] = await Promise.all([
    queue.getJobCounts(...UNFINISHED_PAGE_STATES),
    recentThroughput(redis, { queue: pageQueue(options.variant), kind: pageKind(options) }, ETA_WINDOW_MINUTES),
    queue.getWorkersCount(),
  ]);
  const left = Object.values(counts).reduce((sum, count) => sum + count, 0);
  const eta = timeLeft([{ left, perMinute }], workers > 0);
  if (eta.state === 'nothing-left') return 0;
  return eta.state === 'minutes' ? Math.ceil(eta.minutes * 60) : null;
}
