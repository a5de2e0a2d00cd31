// From inputs to queued work (docs/design.md "Data flow"): every input document is planned, its source
// staged once, and one BullMQ flow added per document: the parent 'document <docId>' on
// {scriptorium}:documents with one child per page (V3 parse-multi: per page group) on the page queue
// of the document's variant ({scriptorium}:pages-v3), which only workers of that variant take from.
// Job ids come from the docId, so enqueueing the same input again adds nothing. A document of more
// than PAGE_JOB_CHUNK page jobs is added in chunks, so that no single transaction (nor its command in
// memory) grows with the document (addDocumentJobs).
//
// What happens to each input, as the summary reports it:
// - enqueued: a new flow was added. For a document an earlier run left unfinished or with failed
//   pages, only its pages without a stored result are queued (page-resume.ts).
// - already-done: results/<docId>/_DONE exists; nothing is staged or added.
// - already-queued: its document job is still in Redis (waiting for pages, waiting or running).
// - retried: its document job had failed (assembly, after all tries): that job is tried again.
// - rejected: no usable document (unreadable, unsupported, damaged, encrypted without the right
//   password, or left out while expanding the inputs). Rejected inputs have no docId: each reason is
//   recorded in storage at rejected/<sha256 of the uri>.json, listed in the summary, and printed by the CLI.
import { FlowProducer, Queue, type FlowJob, type Job } from 'bullmq';

import type { OcrJobOptions, PageJobData } from '../jobs/job-types.js';
import { rejectedInputKey, type DocumentKeys } from '../jobs/storage-layout.js';
import { documentJobId, documentJobName, pageJobId, pageJobName } from '../queue/job-ids.js';
import { documentJobOptions, pageJobOptions, type PageJobLifecycle } from '../queue/job-options.js';
import { DOCUMENTS, fullQueueName, pageQueue } from '../queue/queue-names.js';
import { flushTraces, queueTelemetry } from '../queue/tracing.js';
import type { Storage } from '../storage/storage.js';
import { expandInputs, type ExpandInputsOptions, type ProducerInput } from './input-sources.js';
import { pageJobsWithoutResults } from './page-resume.js';
import { planDocument, stageSource, type DocumentLimits, type PlannedDocument } from './plan-document.js';

/** Page jobs added in one transaction; a document of more is added in chunks of this many. */
export const PAGE_JOB_CHUNK = 500;
/**
 * How long the page job that holds a chunked document's job back waits when the producer stops before
 * releasing it; then the document is assembled from the page jobs that were added (the others listed
 * as failed, for `retry` or another enqueue to queue).
 */
const HOLDING_PAGE_DELAY_MS = 10 * 60_000;
import type { RedisConnectionOptions } from '../queue/redis.js';

export interface EnqueueOptions extends PageJobLifecycle {
  /** The options that change the output; the same for every document. */
  ocr: OcrJobOptions;
  /** Where sources are staged and results are written. */
  storage: Storage;
  /**
   * Opens encrypted PDFs. The page jobs of a document that needs it carry it sealed to the
   * document's bytes (documents/sealed-pdf-password.ts), never in clear. Default: none.
   */
  pdfPassword?: string;
  /** Options for a `client` connection (see redisOptions). */
  connection: RedisConnectionOptions;
  /** Documents over these are rejected with the reason. Default: no limits. */
  limits?: DocumentLimits;
  /** Archive limits and S3 settings for the inputs. Default: expandInputs's defaults. */
  inputs?: Omit<ExpandInputsOptions, 'onSkip'>;
  /** Told about each input as soon as it is settled. Default: none. */
  onDocument?: (document: QueuedDocument | RejectedInput) => void;
  /** Stops after the document in hand: the summary then covers the inputs settled so far. */
  signal?: AbortSignal;
  /**
   * Asked before each new flow is staged and added (not for documents done or queued already); it
   * waits for room, or throws to refuse the document, which then stops the enqueue. Default: none.
   */
  admit?: (document: DocumentToQueue) => Promise<void>;
  /** Queues only the page jobs covering one of these pages (a retry of chosen pages). Default: every page without a stored result. */
  onlyPages?: readonly number[];
}

/** A document about to be queued, as `admit` is told of it. */
export interface DocumentToQueue {
  uri: string;
  docId: string;
  variant: OcrJobOptions['variant'];
  /** Pages its page jobs read (those without a stored result). */
  pages: number;
  /** Its page jobs: one per page, or per V3 page group. */
  pageJobs: number;
}

export type QueuedState = 'enqueued' | 'already-done' | 'already-queued' | 'retried';

export interface QueuedDocument {
  state: QueuedState;
  uri: string;
  docId: string;
  pages: number;
  /** Its staged source and its results folder. */
  keys: DocumentKeys;
  /** A damaged document that was rebuilt: what is wrong, and how many pages can be read. */
  damage?: string;
}

export interface RejectedInput {
  state: 'rejected';
  uri: string;
  reason: string;
}

export interface EnqueueSummary {
  /** Documents whose flow was added now. */
  documents: number;
  /** Pages of those documents. */
  pages: number;
  /** Documents finished by an earlier run (their _DONE marker exists). */
  skippedDone: number;
  /** Documents whose jobs were already in Redis (still queued, or retried after a failed assembly). */
  alreadyQueued: number;
  rejected: RejectedInput[];
  /** Every input document that has a docId, in input order, with what happened to it. */
  queued: QueuedDocument[];
}

export async function enqueueDocuments(inputs: readonly ProducerInput[], options: EnqueueOptions): Promise<EnqueueSummary> {
  const summary: EnqueueSummary = { documents: 0, pages: 0, skippedDone: 0, alreadyQueued: 0, rejected: [], queued: [] };
  const reject = (uri: string, reason: string) => {
    const rejected: RejectedInput = { state: 'rejected', uri, reason };
    summary.rejected.push(rejected);
    options.onDocument?.(rejected);
  };
  // With tracing on, each document's flow starts a trace that its page jobs and assembly continue.
  const flows = new FlowProducer({ connection: options.connection, prefix: DOCUMENTS.prefix, telemetry: await queueTelemetry() });
  const documents = new Queue(DOCUMENTS.name, { connection: options.connection, prefix: DOCUMENTS.prefix });
  const pageJobs = new Queue(pageQueue(options.ocr.variant).name, { connection: options.connection, prefix: DOCUMENTS.prefix });
  try {
    for await (const input of expandInputs(inputs, { ...options.inputs, onSkip: reject })) {
      if (options.signal?.aborted) break;
      const deps = { storage: options.storage, whenUnreachable: options.inputs?.whenUnreachable, limits: options.limits };
      const plan = await planDocument(input, options.ocr, deps, options.pdfPassword);
      if (plan.status === 'rejected') {
        reject(plan.uri, plan.reason);
        continue;
      }
      const state = await enqueuePlanned(plan, options, { flows, documents, pageJobs });
      const { pageCount: pages, damage } = plan.documentJob;
      const queued: QueuedDocument = { state, uri: input.uri, docId: plan.docId, pages, keys: plan.keys, ...(damage === undefined ? {} : { damage }) };
      summary.queued.push(queued);
      if (state === 'enqueued') {
        summary.documents++;
        summary.pages += queued.pages;
      } else if (state === 'already-done') {
        summary.skippedDone++;
      } else {
        summary.alreadyQueued++;
      }
      options.onDocument?.(queued);
    }
  } finally {
    // Closing a connection that is still being opened rejects BullMQ's own pending setup with nobody
    // to catch it (when every input was refused before Redis was needed): let them settle first.
    await Promise.allSettled([flows.waitUntilReady(), documents.waitUntilReady(), pageJobs.waitUntilReady()]);
    await Promise.all([flows.close(), documents.close(), pageJobs.close(), flushTraces()]);
  }
  // Rejected inputs have no docId; their reasons stay in storage beside the results.
  for (const { uri, reason } of summary.rejected) {
    const record = { uri, reason, rejectedAt: new Date().toISOString() };
    await options.storage.put(rejectedInputKey(uri), Buffer.from(`${JSON.stringify(record, null, 2)}\n`), { contentType: 'application/json' });
  }
  return summary;
}

interface EnqueueQueues {
  flows: FlowProducer;
  documents: Queue;
  /** The page queue of the options' variant. */
  pageJobs: Queue;
}

async function enqueuePlanned(plan: PlannedDocument, options: EnqueueOptions, { flows, documents, pageJobs: queue }: EnqueueQueues): Promise<QueuedState> {
  if (plan.alreadyDone) return 'already-done';
  const existing = await documents.getJob(documentJobId(plan.docId));
  if (existing !== undefined) {
    const state = await existing.getState();
    if (state === 'failed') {
      await existing.retry('failed');
      return 'retried';
    }
    if (state !== 'completed') return 'already-queued';
    // Completed, yet planDocument found no _DONE marker: pages failed, or its results were deleted
    // since. BullMQ would ignore a flow with the same ids, so the old jobs go first.
    await existing.remove({ removeChildren: true });
  }
  // Pages an earlier run stored are not read again; the assembler takes their stored results.
  const pageJobs = (await pageJobsWithoutResults(plan.docId, plan.pageJobs, options.storage)).filter(
    (job) => options.onlyPages === undefined || options.onlyPages.some((page) => page >= job.firstPage && page <= job.lastPage),
  );
  await options.admit?.({
    uri: plan.documentJob.sourceUri,
    docId: plan.docId,
    variant: options.ocr.variant,
    pages: pageJobs.reduce((sum, job) => sum + job.lastPage - job.firstPage + 1, 0),
    pageJobs: pageJobs.length,
  });
  await stageSource(plan, options.storage);
  await addDocumentJobs({ ...plan, pageJobs }, options, flows, queue);
  return 'enqueued';
}

/**
 * The document's flow, in one transaction up to PAGE_JOB_CHUNK page jobs. A larger document's job
 * would be released as soon as the page jobs added so far have settled, so its flow first holds one
 * page job only, delayed: the other page jobs are added to it in chunks, and that first one is
 * released last. Adding again what exists adds nothing, as for a whole flow.
 */
async function addDocumentJobs(plan: PlannedDocument, lifecycle: PageJobLifecycle, flows: FlowProducer, pages: Queue): Promise<void> {
  if (plan.pageJobs.length <= PAGE_JOB_CHUNK) {
    await flows.add(documentFlow(plan, lifecycle));
    return;
  }
  const [holding, ...others] = plan.pageJobs;
  const flow = documentFlow({ ...plan, pageJobs: [holding] }, lifecycle);
  const [holdingChild] = flow.children ?? [];
  holdingChild.opts = { ...holdingChild.opts, delay: HOLDING_PAGE_DELAY_MS };
  await flows.add(flow);
  const parent = { id: documentJobId(plan.docId), queue: fullQueueName(DOCUMENTS) };
  for (let start = 0; start < others.length; start += PAGE_JOB_CHUNK) {
    const chunk = others.slice(start, start + PAGE_JOB_CHUNK).map((data) => {
      const job = pageJob(plan.docId, data, lifecycle);
      return { ...job, opts: { ...job.opts, parent } };
    });
    await pages.addBulk(chunk);
  }
  const held: Job | undefined = await pages.getJob(pageJobId(plan.docId, holding.firstPage, holding.lastPage));
  if (held !== undefined && (await held.isDelayed())) await held.promote();
}

/**
 * The document's flow: the parent job on the documents queue, one child per page job on the page
 * queue of its variant. Adding it again while its jobs exist adds nothing: BullMQ keeps the jobs it holds by id.
 */
export function documentFlow(plan: Pick<PlannedDocument, 'docId' | 'documentJob' | 'pageJobs'>, lifecycle: PageJobLifecycle = {}): FlowJob {
  const { docId, documentJob, pageJobs } = plan;
  return {
    name: documentJobName(docId),
    queueName: DOCUMENTS.name,
    data: documentJob,
    opts: documentJobOptions(documentJobId(docId), lifecycle.priority),
    children: pageJobs.map((data) => ({ ...pageJob(docId, data, lifecycle), queueName: pageQueue(data.options.variant).name })),
  };
}

/** One page job's name, data and options. */
function pageJob(docId: string, data: PageJobData, lifecycle: PageJobLifecycle): { name: string; data: PageJobData; opts: ReturnType<typeof pageJobOptions> } {
  return { name: pageJobName(docId, data.firstPage, data.lastPage), data, opts: pageJobOptions(pageJobId(docId, data.firstPage, data.lastPage), lifecycle) };
}
