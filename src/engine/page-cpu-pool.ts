// The engine's per-page CPU work in worker threads: preprocessing (about 0.2–0.6 s of Pillow-exact
// resampling per page), post-processing and the search for loops in the generated ids run off the event loop, so that a worker's lock renewals,
// heartbeats and Redis traffic never wait behind them. Requests go to the first idle thread; threads
// start on first use, and idle ones do not keep the process alive.
import os from 'node:os';
import { Worker } from 'node:worker_threads';

import type { RgbImage } from '../documents/rgb-image.js';
import type { PreprocessedPage } from './image-preprocess.js';
import type { Variant, VisionMode } from '../vocabulary/ocr-vocabulary.js';
import type { OcrPage, PageSize } from './ocr-postprocess.js';
import type { Repetition } from './repetition.js';

const THREAD_URL = new URL('./page-cpu-thread-main.js', import.meta.url);

export type PageCpuRequest =
  | { id: number; kind: 'preprocess'; image: RgbImage; variant: Variant; mode: VisionMode }
  | { id: number; kind: 'postprocess'; rawText: string; size: PageSize; pageIndex: number }
  | { id: number; kind: 'postprocess-multi'; rawText: string; sizes: PageSize[] }
  | { id: number; kind: 'repetition'; ids: Int32Array };

export type PageCpuReply =
  | { id: number; ok: true; kind: 'preprocess'; page: PreprocessedPage }
  | { id: number; ok: true; kind: 'postprocess'; pages: OcrPage[] }
  | { id: number; ok: true; kind: 'repetition'; repetition: Repetition | undefined }
  | { id: number; ok: false; message: string };

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;
type Task = WithoutId<PageCpuRequest>;

interface Pending {
  request: PageCpuRequest;
  resolve(reply: PageCpuReply & { ok: true }): void;
  reject(error: Error): void;
}

interface Slot {
  worker?: Worker;
  running?: Pending;
}

/** Default thread count: half the CPUs (the engine's own threads use them too), at least one, at most four. */
export function defaultPageCpuThreads(): number {
  return Math.min(4, Math.max(1, Math.floor(os.availableParallelism() / 2)));
}

let shared: PageCpuThreads | undefined;

/** The process-wide threads every engine uses by default. */
export function sharedPageCpuThreads(): PageCpuThreads {
  shared ??= new PageCpuThreads();
  return shared;
}

export class PageCpuThreads {
  readonly #slots: Slot[];
  readonly #queue: Pending[] = [];
  #nextId = 1;
  #closed = false;

  constructor(size = defaultPageCpuThreads()) {
    if (!(Number.isInteger(size) && size >= 1)) throw new RangeError(`size must be an integer >= 1, got ${size}`);
    this.#slots = Array.from({ length: size }, () => ({}));
  }

  /** preprocessPage(image, variant, mode) on a thread; the image is copied, the result's arrays are moved back. */
  async preprocess(image: RgbImage, variant: Variant, mode: VisionMode): Promise<PreprocessedPage> {
    const reply = await this.#submit({ kind: 'preprocess', image, variant, mode });
    if (reply.kind !== 'preprocess') throw new Error('page thread answered a preprocess request with another kind');
    return reply.page;
  }

  /** parsePageOutput(rawText, size, pageIndex) on a thread. */
  async postprocess(rawText: string, size: PageSize, pageIndex: number): Promise<OcrPage> {
    const reply = await this.#submit({ kind: 'postprocess', rawText, size, pageIndex });
    if (reply.kind !== 'postprocess') throw new Error('page thread answered a postprocess request with another kind');
    return reply.pages[0];
  }

  /** parseMultiPageOutput(rawText, sizes) on a thread. */
  async postprocessMulti(rawText: string, sizes: PageSize[]): Promise<OcrPage[]> {
    const reply = await this.#submit({ kind: 'postprocess-multi', rawText, sizes });
    if (reply.kind !== 'postprocess') throw new Error('page thread answered a postprocess request with another kind');
    return reply.pages;
  }

  /** findRepetition(ids) with the default thresholds on a thread; the ids are copied. */
  async repetition(ids: readonly number[]): Promise<Repetition | undefined> {
    const reply = await this.#submit({ kind: 'repetition', ids: Int32Array.from(ids) });
    if (reply.kind !== 'repetition') throw new Error('page thread answered a repetition request with another kind');
    return reply.repetition;
  }

  /** Stops the threads; requests still queued or running reject. */
  async close(): Promise<void> {
    this.#closed = true;
    const closed = new Error('the page threads were closed before the request finished');
    for (const pending of this.#queue.splice(0)) pending.reject(closed);
    await Promise.all(
      this.#slots.map((slot) => {
        const { worker, running } = slot;
        slot.worker = undefined;
        slot.running = undefined;
        running?.reject(closed);
        return worker?.terminate();
      }),
    );
  }

  #submit(task: Task): Promise<PageCpuReply & { ok: true }> {
    if (this.#closed) return Promise.reject(new Error('the page threads are closed'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ request: { ...task, id: this.#nextId++ } as PageCpuRequest, resolve, reject });
      this.#dispatch();
    });
  }

  #dispatch(): void {
    for (const slot of this.#slots) {
      if (this.#queue.length === 0) return;
      if (slot.running !== undefined) continue;
      const pending = this.#queue.shift()!;
      const worker = slot.worker ?? this.#spawn(slot);
      slot.running = pending;
      worker.ref();
      worker.postMessage(pending.request);
    }
  }

  #spawn(slot: Slot): Worker {
    const worker = new Worker(THREAD_URL);
    worker.unref();
    worker.on('message', (reply: PageCpuReply) => {
      const running = slot.running;
      if (slot.worker !== worker || running?.request.id !== reply.id) return;
      slot.running = undefined;
      worker.unref();
      if (reply.ok) running.resolve(reply);
      else running.reject(new Error(reply.message));
      this.#dispatch();
    });
    const lost = (reason: string) => {
      if (slot.worker !== worker) return;
      const running = slot.running;
      slot.worker = undefined;
      slot.running = undefined;
      void worker.terminate();
      running?.reject(new Error(`a page thread ${reason}`));
      this.#dispatch();
    };
    worker.on('error', (error) => lost(`failed: ${error.message}`));
    worker.on('exit', (code) => lost(`exited with code ${code}`));
    slot.worker = worker;
    return worker;
  }
}
