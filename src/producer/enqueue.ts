// From inputs to queued work (docs/design.md "Data flow"): every input document is planned, its source
// staged once, and one BullMQ flow added per document: the parent 'document <docId>' on
// scriptorium:documents with one child per page (V3 parse-multi: per page group) on the page queue
// of the document's variant (scriptorium:pages-v3), which only workers of that variant take from.
// Job ids come from the docId, so enqueueing the same input again adds nothing.
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
import { FlowProducer, Queue, type FlowJob } from 'bullmq';
import type { RedisOptions } from 'ioredis';

import type { OcrJobOptions } from '../jobs/job-types.js';
import { rejectedInputKey, type DocumentKeys } from '../jobs/storage-layout.js';
import { documentJobId, documentJobName, pageJobId, pageJobName } from '../queue/job-ids.js';
import { documentJobOptions, pageJobOptions, type PageJobLifecycle } from '../queue/job-options.js';
import { DOCUMENTS, pageQueue } from '../queue/queue-names.js';
import { flushTraces, queueTelemetry } from '../queue/tracing.js';
import type { Storage } from '../storage/storage.js';
import { expandInputs, type ExpandInputsOptions, type ProducerInput } from './input-sources.js';
import { pageJobsWithoutResults } from './page-resume.js';
import { planDocument, stageSource, type PlannedDocument } from './plan-document.js';

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
  connection: RedisOptions;
  /** Archive limits and S3 settings for the inputs. Default: expandInputs's defaults. */
  inputs?: Omit<ExpandInputsOptions, 'onSkip'>;
  /** Told about each input as soon as it is settled. Default: none. */
  onDocument?: (document: QueuedDocument | RejectedInput) => void;
  /** Stops after the document in hand: the summary then covers the inputs settled so far. */
  signal?: AbortSignal;
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
  try {
    for await (const input of expandInputs(inputs, { ...options.inputs, onSkip: reject })) {
      if (options.signal?.aborted) break;
      const plan = await planDocument(input, options.ocr, { storage: options.storage, whenUnreachable: options.inputs?.whenUnreachable }, options.pdfPassword);
      if (plan.status === 'rejected') {
        reject(plan.uri, plan.reason);
        continue;
      }
      const state = await enqueuePlanned(plan, options, flows, documents);
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
    await Promise.all([flows.close(), documents.close(), flushTraces()]);
  }
  // Rejected inputs have no docId; their reasons stay in storage beside the results.
  for (const { uri, reason } of summary.rejected) {
    const record = { uri, reason, rejectedAt: new Date().toISOString() };
    await options.storage.put(rejectedInputKey(uri), Buffer.from(`${JSON.stringify(record, null, 2)}\n`), { contentType: 'application/json' });
  }
  return summary;
}

async function enqueuePlanned(plan: PlannedDocument, options: EnqueueOptions, flows: FlowProducer, documents: Queue): Promise<QueuedState> {
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
  await stageSource(plan, options.storage);
  // Pages an earlier run stored are not read again; the assembler takes their stored results.
  const pageJobs = await pageJobsWithoutResults(plan.docId, plan.pageJobs, options.storage);
  await flows.add(documentFlow({ ...plan, pageJobs }, options));
  return 'enqueued';
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
    children: pageJobs.map((data) => ({
      name: pageJobName(docId, data.firstPage, data.lastPage),
      queueName: pageQueue(data.options.variant).name,
      data,
      opts: pageJobOptions(pageJobId(docId, data.firstPage, data.lastPage), lifecycle),
    })),
  };
}
