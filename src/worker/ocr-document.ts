// `scriptorium ocr`'s reading of one document: exactly what a worker does with its page jobs, minus
// the queue. The producer plans the page jobs (V3 page groups included) and stages the source in a
// private temporary file storage; the worker's page pipeline reads the jobs concurrently through the
// engine's continuous batch and stores the same page-result JSON; those JSONs are the result.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import type { Logger } from 'pino';

import type { OcrEngine } from '../engine/ocr-engine.js';
import type { OcrJobOptions, PageOutcome } from '../jobs/job-types.js';
import type { PageResultJson } from '../jobs/result-json.js';
import { pageResultKey } from '../jobs/storage-layout.js';
import { mapInOrder } from '../producer/map-in-order.js';
import { planDocument, stageSource, type PlannedDocument } from '../producer/plan-document.js';
import { FileStorage } from '../storage/file-storage.js';
import { PagePipeline } from './page-pipeline.js';

export interface OcrDocumentOptions {
  uri: string;
  bytes: Buffer;
  ocr: OcrJobOptions;
  pdfPassword?: string;
  /** 1-based pages to read; undefined: every page. A V3 page group holding one is read whole. */
  pages?: (pageCount: number) => number[];
  engine: OcrEngine;
  checkpointId: string;
  synthetic: boolean;
  /** Page jobs read at once (as a worker holds them). */
  concurrency: number;
  logger: Logger;
}

export interface OcrDocument {
  planned: PlannedDocument;
  /** The page-result JSON of every selected page read, in page order. */
  pages: PageResultJson[];
  failedPages: { page: number; reason: string }[];
}

/** The reason, when the input is no usable document (corrupt, encrypted without the password, unsupported). */
export async function ocrDocument(options: OcrDocumentOptions): Promise<OcrDocument | { rejected: string }> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-ocr-'));
  try {
    const storage = new FileStorage(root);
    const { bytes, uri } = options;
    const planned = await planDocument({ uri, size: bytes.length, bytes: async () => bytes }, options.ocr, { storage }, options.pdfPassword);
    if (planned.status === 'rejected') return { rejected: planned.reason };
    const selected = new Set(options.pages?.(planned.documentJob.pageCount) ?? pagesOf(1, planned.documentJob.pageCount));
    const jobs = planned.pageJobs.filter((job) => pagesOf(job.firstPage, job.lastPage).some((page) => selected.has(page)));
    await stageSource(planned, storage);

    const pipeline = new PagePipeline({
      engine: options.engine,
      storage,
      logger: options.logger,
      host: os.hostname(),
      checkpointId: options.checkpointId,
      synthetic: options.synthetic,
    });
    // No queue here: each done job is its own completion, committed at once.
    const outcomes: PageOutcome[] = [];
    const reads = mapInOrder(jobs, options.concurrency, async (data, index) => {
      const outcome = await pipeline.processPage({ data, attempt: 1, jobId: `${planned.docId}:${index + 1}` });
      if (outcome.status === 'done') await pipeline.commit(outcome);
      return outcome;
    });
    for await (const outcome of reads) outcomes.push(outcome);

    const pages: PageResultJson[] = [];
    const failedPages: OcrDocument['failedPages'] = [];
    for (const [index, outcome] of outcomes.entries()) {
      const { firstPage, lastPage, docId } = jobs[index];
      for (const page of pagesOf(firstPage, lastPage).filter((p) => selected.has(p))) {
        if (outcome.status === 'failed') failedPages.push({ page, reason: outcome.reason });
        else pages.push(JSON.parse((await storage.get(pageResultKey(docId, page, 'json'))).toString('utf8')) as PageResultJson);
      }
    }
    return { planned, pages, failedPages };
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

function pagesOf(first: number, last: number): number[] {
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}
