// Renders PDF pages, and finds the pages that already carry text, in worker threads, so PDFium never
// blocks the event loop. Each worker keeps its last opened document: send the pages of one document in
// a row to parse it once.
import { Worker } from 'node:worker_threads';

import { DocumentError } from './document-error.js';
import type { PdfReply, PdfRequest, PdfSource, PdfTask } from './pdf-render-protocol.js';
import { checkPdfRenderSize, type PdfRenderSize, type RenderedPdfPage } from './pdf-render-size.js';

const WORKER_URL = new URL('./pdf-render-worker.js', import.meta.url);

export interface PdfRendererOptions {
  /** Worker threads, each with its own PDFium instance and last opened document. Default 1. */
  size?: number;
  /** A request running longer fails with a DocumentError and its worker is replaced. Default 120 000. */
  timeoutMs?: number;
}

export interface PdfRenderOptions extends PdfRenderSize {
  password?: string;
}

/**
 * A PDF given as bytes (copied once and handed to a worker) or as a file path (read by the worker:
 * cheaper for large files).
 */
export type PdfInput = Uint8Array | string;

type PdfSuccess = Extract<PdfReply, { ok: true }>;

interface QueuedRequest {
  request: PdfRequest;
  transfer: ArrayBuffer[];
  input: PdfInput;
  resolve: (reply: PdfSuccess) => void;
  reject: (error: Error) => void;
}

interface WorkerSlot {
  worker?: Worker;
  running?: QueuedRequest;
  timer?: NodeJS.Timeout;
  /** What the worker opened last: requests for the same input go to it while it is idle. */
  lastInput?: string | WeakRef<Uint8Array>;
}

export class PdfRenderer {
  readonly #slots: WorkerSlot[];
  readonly #queue: QueuedRequest[] = [];
  readonly #timeoutMs: number;
  #nextId = 1;
  #closed = false;

  /** Workers start on first use; idle ones do not keep the process alive. */
  constructor({ size = 1, timeoutMs = 120_000 }: PdfRendererOptions = {}) {
    if (!(Number.isInteger(size) && size >= 1)) {
      throw new RangeError(`size must be an integer >= 1, got ${size}`);
    }
    if (!(timeoutMs > 0)) throw new RangeError(`timeoutMs must be positive, got ${timeoutMs}`);
    this.#slots = Array.from({ length: size }, () => ({}));
    this.#timeoutMs = timeoutMs;
  }

  /**
   * The page count, and for a damaged PDF that was rebuilt, what is wrong with it (PdfDocument.damage).
   * Rejects with DocumentError when the PDF cannot be opened (no PDF, encrypted, unreadable).
   */
  async open(input: PdfInput, { password }: { password?: string } = {}): Promise<{ pageCount: number; damage?: string }> {
    const { pageCount, damage } = await this.#submit(input, password, { kind: 'count' });
    return damage === undefined ? { pageCount } : { pageCount, damage };
  }

  /** Rejects with DocumentError when the PDF cannot be opened or the page cannot be rendered. */
  async render(input: PdfInput, pageIndex: number, options: PdfRenderOptions = {}): Promise<RenderedPdfPage> {
    const size = { dpi: options.dpi, longestSide: options.longestSide };
    checkPdfRenderSize(size);
    const reply = await this.#submit(input, options.password, { kind: 'render', pageIndex, size });
    if (reply.image === undefined) throw new Error('PDF render worker replied without an image');
    return reply.image;
  }

  /**
   * For each page, whether it already carries extractable text (PdfDocument.pagesWithText). Rejects
   * with DocumentError when the PDF cannot be opened.
   */
  async pagesWithText(input: PdfInput, { password }: { password?: string } = {}): Promise<boolean[]> {
    const reply = await this.#submit(input, password, { kind: 'text' });
    if (reply.pagesWithText === undefined) throw new Error('PDF render worker replied without the pages with text');
    return reply.pagesWithText;
  }

  /** Stops the workers; requests still queued or running reject. */
  async close(): Promise<void> {
    this.#closed = true;
    const closed = new Error('PdfRenderer was closed before the request finished');
    for (const queued of this.#queue.splice(0)) queued.reject(closed);
    await Promise.all(
      this.#slots.map((slot) => {
        const { worker, running } = this.#detach(slot);
        running?.reject(closed);
        return worker?.terminate();
      }),
    );
  }

  #submit(input: PdfInput, password: string | undefined, task: PdfTask): Promise<PdfSuccess> {
    if (this.#closed) return Promise.reject(new Error('PdfRenderer is closed'));
    const { source, transfer } = toPdfSource(input);
    return new Promise((resolve, reject) => {
      const request: PdfRequest = { ...task, id: this.#nextId++, source, password };
      this.#queue.push({ request, transfer, input, resolve, reject });
      this.#dispatch();
    });
  }

  #dispatch(): void {
    for (;;) {
      const next = this.#queue[0];
      const idle = this.#slots.filter((slot) => slot.running === undefined);
      if (next === undefined || idle.length === 0) return;
      this.#queue.shift();
      const slot =
        idle.find((candidate) => sameInput(candidate.lastInput, next.input)) ??
        idle.find((candidate) => candidate.worker !== undefined) ??
        idle[0];
      this.#start(slot, next);
    }
  }

  #start(slot: WorkerSlot, queued: QueuedRequest): void {
    const worker = slot.worker ?? this.#spawn(slot);
    slot.running = queued;
    slot.lastInput = typeof queued.input === 'string' ? queued.input : new WeakRef(queued.input);
    slot.timer = setTimeout(
      () => this.#replace(slot, worker, `the renderer timed out after ${this.#timeoutMs} ms`),
      this.#timeoutMs,
    );
    worker.ref();
    worker.postMessage(queued.request, queued.transfer);
  }

  #spawn(slot: WorkerSlot): Worker {
    const worker = new Worker(WORKER_URL);
    worker.unref();
    worker.on('message', (reply: PdfReply) => this.#settle(slot, worker, reply));
    worker.on('error', (error) => this.#replace(slot, worker, `the renderer failed: ${error.message}`));
    worker.on('exit', (code) => this.#replace(slot, worker, `the renderer exited with code ${code}`));
    slot.worker = worker;
    return worker;
  }

  #settle(slot: WorkerSlot, worker: Worker, reply: PdfReply): void {
    const running = slot.running;
    if (slot.worker !== worker || running?.request.id !== reply.id) return;
    clearTimeout(slot.timer);
    slot.running = undefined;
    worker.unref();
    if (reply.ok) {
      running.resolve(reply);
    } else {
      running.reject(new DocumentError(reply.reason));
      if (reply.fatal) void this.#detach(slot).worker?.terminate();
    }
    this.#dispatch();
  }

  /** The worker itself failed or hung: the running request fails and a fresh worker takes over. */
  #replace(slot: WorkerSlot, worker: Worker, reason: string): void {
    if (slot.worker !== worker) return;
    const { running } = this.#detach(slot);
    void worker.terminate();
    running?.reject(new DocumentError(`${describe(running.request)}: ${reason}`));
    this.#dispatch();
  }

  #detach(slot: WorkerSlot): { worker?: Worker; running?: QueuedRequest } {
    const { worker, running } = slot;
    clearTimeout(slot.timer);
    slot.worker = undefined;
    slot.running = undefined;
    slot.lastInput = undefined;
    return { worker, running };
  }
}

/** The worker gets its own copy of bytes (transferred, not cloned again); the caller's stay intact. */
function toPdfSource(input: PdfInput): { source: PdfSource; transfer: ArrayBuffer[] } {
  if (typeof input === 'string') return { source: { path: input }, transfer: [] };
  const bytes = new Uint8Array(input);
  return { source: { bytes }, transfer: [bytes.buffer] };
}

function sameInput(last: string | WeakRef<Uint8Array> | undefined, input: PdfInput): boolean {
  return typeof last === 'string' ? last === input : last?.deref() === input;
}

function describe(request: PdfRequest): string {
  if (request.kind === 'count') return 'counting PDF pages';
  if (request.kind === 'text') return 'finding the PDF pages with text';
  return `rendering PDF page index ${request.pageIndex}`;
}
