// The progress `enqueue` and `run` draw on a terminal: while inputs are staged and queued, how many
// documents were found, queued, skipped and rejected and how many pages were queued, and why it waits
// for room in the queue when it does; while waiting for the documents,
// a bar over the pages finished, with the documents finished. The commands' own lines stay as they
// are; when they go to the same terminal they are printed above the progress line.
import { MultiBar, type SingleBar } from 'cli-progress';

import type { QueuedDocument, RejectedInput } from '../producer/enqueue.js';

/** A stream progress can be drawn on (process.stderr, or a test's stand-in). */
export interface TerminalStream extends NodeJS.WritableStream {
  isTTY?: boolean;
  columns?: number;
}

export interface ProgressTerminal {
  stream: TerminalStream;
  /** stdout is the same terminal, so the command's lines must be printed above the progress line. */
  linesHere: boolean;
}

/** stderr when it is a terminal; undefined when it is not (a pipe, a file, a CI log): no progress then. */
export function progressTerminal(stdout: TerminalStream = process.stdout, stderr: TerminalStream = process.stderr): ProgressTerminal | undefined {
  return stderr.isTTY === true ? { stream: stderr, linesHere: stdout.isTTY === true } : undefined;
}

// Documents skipped were done or queued before; the summary line afterwards tells the two apart.
const QUEUEING_FORMAT = 'queueing: {found} found, {queued} queued, {skipped} skipped, {rejected} rejected, pages queued: {pages} | {duration_formatted}{room}';
const WAITING_FORMAT = 'waiting: [{bar}] pages {value}/{total}, documents {documents}/{documentsTotal} finished | {duration_formatted}';

interface QueueingCounts {
  found: number;
  queued: number;
  pages: number;
  skipped: number;
  rejected: number;
}

interface FollowedDocument {
  pages: number;
  finishedPages: number;
  finished: boolean;
}

/** Starts with the queueing line; waitFor switches to the waiting bar. Always clear() it in the end. */
export class EnqueueProgress {
  readonly #terminal: ProgressTerminal;
  readonly #write: (line: string) => void;
  readonly #counts: QueueingCounts = { found: 0, queued: 0, pages: 0, skipped: 0, rejected: 0 };
  readonly #followed = new Map<string, FollowedDocument>();
  #finishedPages = 0;
  #finishedDocuments = 0;
  #display: { bars: MultiBar; bar: SingleBar } | undefined;

  /** `write` prints one of the command's lines when they do not go to the progress terminal. */
  constructor(terminal: ProgressTerminal, write: (line: string) => void) {
    this.#terminal = terminal;
    this.#write = write;
    this.#show(QUEUEING_FORMAT, 0, { ...this.#counts, room: '' });
  }

  /** One of the command's lines. */
  line(text: string): void {
    if (this.#display !== undefined && this.#terminal.linesHere) {
      this.#display.bars.log(`${text}\n`);
    } else {
      this.#write(text);
    }
  }

  /** The producer settled an input (EnqueueOptions.onDocument). */
  inputSettled(document: QueuedDocument | RejectedInput): void {
    const counts = this.#counts;
    counts.found++;
    if (document.state === 'rejected') {
      counts.rejected++;
    } else if (document.state === 'enqueued') {
      counts.queued++;
      counts.pages += document.pages;
    } else {
      counts.skipped++;
    }
    this.#display?.bar.update({ ...counts });
  }

  /** Why the next document waits for room in the queue (`reason`), or that it waits no more (undefined). */
  waitingForRoom(reason: string | undefined): void {
    this.#display?.bar.update({ room: reason === undefined ? '' : ` | waiting for room: ${reason}` });
  }

  /** Shows the waiting bar over these documents' pages. */
  waitFor(documents: readonly QueuedDocument[]): void {
    this.clear();
    let pages = 0;
    for (const document of documents) {
      this.#followed.set(document.docId, { pages: document.pages, finishedPages: 0, finished: false });
      pages += document.pages;
    }
    this.#show(WAITING_FORMAT, pages, { documents: 0, documentsTotal: documents.length });
  }

  /** A page job of a followed document finished (done, or failed for good) with this many pages; late news counts once. */
  pagesFinished(docId: string, pages: number): void {
    const document = this.#followed.get(docId);
    if (document === undefined) return;
    this.#setFinishedPages(document, document.finishedPages + pages);
    this.#updateWaiting();
  }

  /** A followed document was assembled or failed: all its pages count as finished. */
  documentFinished(docId: string): void {
    const document = this.#followed.get(docId);
    if (document === undefined || document.finished) return;
    this.#setFinishedPages(document, document.pages);
    document.finished = true;
    this.#finishedDocuments++;
    this.#updateWaiting();
  }

  /**
   * Removes the progress line (printing the lines still buffered) and gives the terminal back, cursor
   * shown: before the summary line, after the wait, and always at the end.
   */
  clear(): void {
    if (this.#display === undefined) return;
    const { bars } = this.#display;
    this.#display = undefined;
    bars.update();
    bars.stop();
  }

  #setFinishedPages(document: FollowedDocument, pages: number): void {
    const finishedPages = Math.min(document.pages, pages);
    this.#finishedPages += finishedPages - document.finishedPages;
    document.finishedPages = finishedPages;
  }

  #updateWaiting(): void {
    this.#display?.bar.update(this.#finishedPages, { documents: this.#finishedDocuments });
  }

  #show(format: string, total: number, payload: object): void {
    // forceRedraw: after lines are printed above it, the line is drawn again even when unchanged.
    // linewrap: the terminal keeps wrapping long lines; the progress line itself is cut to its width.
    const bars = new MultiBar({
      stream: this.#terminal.stream,
      format,
      barsize: 20,
      hideCursor: true,
      clearOnComplete: true,
      forceRedraw: true,
      linewrap: true,
      gracefulExit: false,
    });
    this.#display = { bars, bar: bars.create(total, 0, payload) };
  }
}
