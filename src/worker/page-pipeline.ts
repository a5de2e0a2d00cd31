// The worker's processing core for a batch of page jobs, independent of the queue: fetch each
// document's source once, render its pages, read all pages of the batch in one batched decode (a V3
// `parse-multi` job in one single pass), then store every page's markdown and JSON with stage times.
import type { Logger } from 'pino';

import { renderPage, type PdfRenderer, type RgbImage } from '../documents/document.js';
import type { OcrEngine, PageResult } from '../engine/ocr-engine.js';
import { pageResultKey, type PageJobData, type StageTimings } from '../jobs/job-types.js';
import type { Storage } from '../storage/storage.js';
import { pageFailureOf, type PageFailure } from './page-failure.js';
import { pageResultJson, type PageReader } from './page-result-json.js';

export interface PagePipelineOptions {
  engine: OcrEngine;
  storage: Storage;
  /** Where PDF pages are rendered; default: the process-wide renderer of the documents façade. */
  renderer?: PdfRenderer;
  logger: Logger;
  /** The machine's name, written into every page result. */
  host: string;
  /** Identity of the loaded checkpoint (e.g. sha256:…), written into every page result. */
  checkpointId: string;
  /** The checkpoint has random weights (`scriptorium model synth`): its text means nothing. */
  synthetic: boolean;
}

export interface PageJob {
  data: PageJobData;
  /** 1 on the first try. */
  attempt: number;
  /** The queue's job id, for the logs. */
  jobId?: string;
}

/** One page whose results are in storage. */
export interface StoredPage {
  page: number;
  /** results/<docId>/pages/<nnnn>.json */
  key: string;
  /** results/<docId>/pages/<nnnn>.md */
  markdownKey: string;
  /** As in the JSON, except that store and total here include the JSON's own write. */
  timings_ms: StageTimings;
}

/** The outcome of one job, for all its pages together (one, or a V3 page group). */
export type PageOutcome =
  | { status: 'done'; docId: string; jobId?: string; pages: StoredPage[] }
  | ({ status: 'failed'; docId: string; jobId?: string; pages: number[] } & PageFailure);

/** A job whose pages are rendered, with the times it took. */
interface RenderedJob {
  index: number;
  job: PageJob;
  pages: number[];
  images: RgbImage[];
  fetchMs: number;
  renderMs: number[];
}

/** When the batch was claimed: wall clock for `queued`, monotonic clock for the stages. */
interface Claim {
  at: number;
  clock: number;
}

export class PagePipeline {
  readonly #options: PagePipelineOptions;
  readonly #reader: PageReader;

  constructor(options: PagePipelineOptions) {
    this.#options = options;
    this.#reader = {
      host: options.host,
      backend: `cpu-${options.engine.model.kernels}`,
      checkpoint: options.checkpointId,
      synthetic: options.synthetic,
    };
  }

  /**
   * Processes page jobs of any documents together; resolves with one outcome per job, in job order.
   * A job that fails (its page cannot be rendered, storage fails) is a failed outcome; the others
   * complete. Rejects only for bugs, never for one job's input.
   */
  async processPages(jobs: readonly PageJob[]): Promise<PageOutcome[]> {
    const claim: Claim = { at: Date.now(), clock: performance.now() };
    const outcomes = new Array<PageOutcome>(jobs.length);
    const fail = (index: number, error: unknown) => {
      outcomes[index] = this.#failed(jobs[index], error);
    };

    const variant = this.#options.engine.variant;
    const byDocument = new Map<string, number[]>();
    jobs.forEach((job, index) => {
      const wanted = job.data.options.variant;
      if (wanted !== variant) {
        fail(index, new Error(`the job is for a ${wanted} model but this worker runs ${variant}: run a ${wanted} worker on this queue`));
        return;
      }
      byDocument.set(job.data.docId, [...(byDocument.get(job.data.docId) ?? []), index]);
    });

    const renderedPerDocument = await Promise.all([...byDocument.values()].map((indices) => this.#fetchAndRender(jobs, indices, fail)));
    const rendered = renderedPerDocument.flat().sort((a, b) => a.index - b.index);

    const stores: Promise<void>[] = [];
    for (const group of recognitionGroups(rendered)) {
      const results = await this.#recognize(group);
      for (const [i, job] of group.entries()) {
        const result = results[i];
        if (result instanceof Error) {
          fail(job.index, result);
          continue;
        }
        const stored = this.#store(job, result, claim).then(
          (outcome) => {
            outcomes[job.index] = outcome;
          },
          (error: unknown) => fail(job.index, error),
        );
        stores.push(stored);
      }
    }
    await Promise.all(stores);
    return outcomes;
  }

  /** Fetches one document's source once, then renders its jobs' pages in order (the renderer keeps the parsed document). */
  async #fetchAndRender(jobs: readonly PageJob[], indices: readonly number[], fail: (index: number, error: unknown) => void): Promise<RenderedJob[]> {
    const { storage, renderer } = this.#options;
    const { keys, type } = jobs[indices[0]].data;
    let bytes: Buffer;
    const fetchStarted = performance.now();
    try {
      bytes = await storage.get(keys.source);
    } catch (error) {
      for (const index of indices) fail(index, error);
      return [];
    }
    const fetchMs = performance.now() - fetchStarted;

    const rendered: RenderedJob[] = [];
    for (const index of indices) {
      const job = jobs[index];
      const pages = pagesOf(job.data);
      const images: RgbImage[] = [];
      const renderMs: number[] = [];
      try {
        for (const page of pages) {
          const started = performance.now();
          images.push(await renderPage(bytes, type, page - 1, { dpi: job.data.options.dpi, pdfRenderer: renderer }));
          renderMs.push(performance.now() - started);
        }
      } catch (error) {
        fail(index, error);
        continue;
      }
      rendered.push({ index, job, pages, images, fetchMs, renderMs });
    }
    return rendered;
  }

  /**
   * The engine's results per job of one recognition group, or the error that job failed with. When a
   * batched decode fails, its jobs are decoded one at a time so that one bad page fails alone.
   */
  async #recognize(group: readonly RenderedJob[]): Promise<Array<PageResult[] | Error>> {
    const { engine, logger } = this.#options;
    const { task, mode, maxNewTokens } = group[0].job.data.options;
    const read = async (images: RgbImage[]): Promise<PageResult[]> =>
      task === 'parse-multi'
        ? // maxNewTokens is per page; one pass produces the text of all its pages.
          engine.recognizeSinglePass(images, { maxNewTokens: maxNewTokens && maxNewTokens * images.length })
        : engine.recognizePages(images, { task, mode, maxNewTokens });

    try {
      const results = await read(group.flatMap((job) => job.images));
      let at = 0;
      return group.map((job) => results.slice(at, (at += job.pages.length)));
    } catch (error) {
      if (group.length === 1) return [asError(error)];
      logger.warn({ err: error, jobs: group.length }, 'batched decode failed; decoding its jobs one at a time');
      const results: Array<PageResult[] | Error> = [];
      for (const job of group) results.push(await read(job.images).catch(asError));
      return results;
    }
  }

  /**
   * Writes each page's markdown, then its JSON: a page JSON in storage means its markdown is there too.
   * The JSON cannot time its own write, so its store and total stop just before it.
   */
  async #store(rendered: RenderedJob, results: PageResult[], claim: Claim): Promise<PageOutcome> {
    const { storage, logger } = this.#options;
    const { job, pages } = rendered;
    const { data, attempt, jobId } = job;
    // Clocks of the producer's and the worker's hosts may disagree by more than the wait.
    const queued = Math.max(0, claim.at - data.enqueuedAt);
    const stored = await Promise.all(
      pages.map(async (page, i): Promise<StoredPage> => {
        const result = results[i];
        const key = pageResultKey(data.keys, page, 'json');
        const markdownKey = pageResultKey(data.keys, page, 'md');
        const started = performance.now();
        await storage.put(markdownKey, Buffer.from(result.markdown), { contentType: 'text/markdown; charset=utf-8' });
        const timings: StageTimings = {
          queued: roundMs(queued),
          fetch: roundMs(rendered.fetchMs),
          render: roundMs(rendered.renderMs[i]),
          preprocess: roundMs(result.timings.preprocess),
          encode: roundMs(result.timings.encode),
          prefill: roundMs(result.timings.prefill),
          decode: roundMs(result.timings.decode),
          postprocess: roundMs(result.timings.postprocess),
          store: roundMs(performance.now() - started),
          total: roundMs(performance.now() - claim.clock),
        };
        const json = pageResultJson(data, page, result, timings, this.#reader, attempt);
        await storage.put(key, Buffer.from(`${JSON.stringify(json, null, 2)}\n`), { contentType: 'application/json' });
        const timings_ms = { ...timings, store: roundMs(performance.now() - started), total: roundMs(performance.now() - claim.clock) };
        logger.info({ docId: data.docId, page, jobId, attempt, tokens: json.tokens, finish: json.finish, timings_ms }, 'page done');
        return { page, key, markdownKey, timings_ms };
      }),
    );
    return { status: 'done', docId: data.docId, jobId, pages: stored };
  }

  #failed(job: PageJob, error: unknown): PageOutcome {
    const { docId } = job.data;
    const failure = pageFailureOf(error);
    const pages = pagesOf(job.data);
    for (const page of pages) {
      this.#options.logger.warn({ docId, page, jobId: job.jobId, attempt: job.attempt, ...failure, err: error }, 'page failed');
    }
    return { status: 'failed', docId, jobId: job.jobId, pages, ...failure };
  }
}

/** Jobs read together: one group per task, mode and token cap; every `parse-multi` job alone. */
function recognitionGroups(rendered: readonly RenderedJob[]): RenderedJob[][] {
  const groups = new Map<string, RenderedJob[]>();
  const singlePasses: RenderedJob[][] = [];
  for (const job of rendered) {
    const { task, mode, maxNewTokens } = job.job.data.options;
    if (task === 'parse-multi') {
      singlePasses.push([job]);
      continue;
    }
    const key = `${task} ${mode} ${maxNewTokens ?? 'default'}`;
    groups.set(key, [...(groups.get(key) ?? []), job]);
  }
  return [...groups.values(), ...singlePasses];
}

/** 1-based page numbers of a job. */
function pagesOf({ firstPage, lastPage }: PageJobData): number[] {
  return Array.from({ length: lastPage - firstPage + 1 }, (_, i) => firstPage + i);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** Milliseconds to 0.1 ms. */
function roundMs(ms: number): number {
  return Math.round(ms * 10) / 10;
}
