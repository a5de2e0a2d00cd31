// The progress line of `enqueue` and `run`, drawn on a stand-in terminal: the counts while inputs
// are queued, the waiting bar over pages and documents, the command's lines above it, and a terminal
// left clean (line cleared, cursor shown) when it stops.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';

import { EnqueueProgress, progressTerminal, type TerminalStream } from '../../src/cli/enqueue-progress.js';
import type { QueuedDocument, RejectedInput } from '../../src/producer/enqueue.js';

/** A stream that says it is a terminal and keeps everything written to it. */
class FakeTerminal extends Writable implements TerminalStream {
  readonly isTTY: boolean;
  readonly columns: number;
  text = '';

  constructor(isTTY = true, columns = 200) {
    super();
    this.isTTY = isTTY;
    this.columns = columns;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

const SHOW_CURSOR = '\x1b[?25h';
const CLEAR_TO_END = '\x1b[0J';

function queued(docId: string, pages: number, state: QueuedDocument['state'] = 'enqueued'): QueuedDocument {
  return { state, uri: `/in/${docId}.pdf`, docId, pages, keys: { source: `staging/${docId}/source.pdf`, results: `results/${docId}/` } };
}

const rejected: RejectedInput = { state: 'rejected', uri: '/in/notes.txt', reason: 'unsupported document type' };

/** Resolves once `terminal` shows `text` after position `from` (the line is redrawn ten times a second). */
async function until(terminal: FakeTerminal, text: string, from = 0): Promise<void> {
  for (let waited = 0; terminal.text.indexOf(text, from) < 0; waited += 20) {
    if (waited > 5000) assert.fail(`the terminal never showed ${JSON.stringify(text)}; it shows ${JSON.stringify(terminal.text.slice(-300))}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('progress is drawn on stderr only when it is a terminal; lines go above it when stdout is that terminal too', () => {
  const tty = new FakeTerminal(true);
  const pipe = new FakeTerminal(false);
  assert.equal(progressTerminal(tty, pipe), undefined);
  assert.deepEqual(progressTerminal(pipe, tty), { stream: tty, linesHere: false });
  assert.deepEqual(progressTerminal(tty, tty), { stream: tty, linesHere: true });
});

test('while queueing, the line counts documents found, queued, skipped and rejected, and pages queued', async () => {
  const terminal = new FakeTerminal();
  const progress = new EnqueueProgress({ stream: terminal, linesHere: false }, () => {});
  try {
    progress.inputSettled(queued('a', 3));
    progress.inputSettled(queued('b', 2));
    progress.inputSettled(queued('c', 7, 'already-done'));
    progress.inputSettled(queued('d', 1, 'already-queued'));
    progress.inputSettled(rejected);
    await until(terminal, 'queueing: 5 found, 2 queued, 2 skipped, 1 rejected, pages queued: 5');
  } finally {
    progress.clear();
  }
});

test('ending the queueing shows the last counts, then clears the line and shows the cursor again', () => {
  const terminal = new FakeTerminal();
  const progress = new EnqueueProgress({ stream: terminal, linesHere: false }, () => {});
  progress.inputSettled(queued('a', 4));
  progress.clear();
  const lastDrawn = terminal.text.lastIndexOf('queueing: 1 found, 1 queued, 0 skipped, 0 rejected, pages queued: 4');
  assert.ok(lastDrawn >= 0, JSON.stringify(terminal.text));
  const after = terminal.text.slice(lastDrawn);
  assert.ok(after.includes(SHOW_CURSOR) && after.endsWith(CLEAR_TO_END), JSON.stringify(after));
  const cleared = terminal.text;
  progress.clear();
  assert.equal(terminal.text, cleared, 'a second clear wrote to the terminal');
});

test('a line printed just before the progress line is cleared is not lost', () => {
  const terminal = new FakeTerminal();
  const progress = new EnqueueProgress({ stream: terminal, linesHere: true }, () => {});
  progress.line('rejected       /in/notes.txt: unsupported document type');
  progress.clear();
  assert.ok(terminal.text.includes('rejected       /in/notes.txt: unsupported document type\n'), JSON.stringify(terminal.text));
});

test('the progress line is cut to the terminal width, and the terminal keeps wrapping the command\'s long lines', async () => {
  const terminal = new FakeTerminal(true, 30);
  const progress = new EnqueueProgress({ stream: terminal, linesHere: true }, () => {});
  const long = `rejected       /in/${'deep/'.repeat(20)}notes.txt: unsupported document type`;
  try {
    progress.inputSettled(rejected);
    progress.line(long);
    await until(terminal, long);
    await until(terminal, 'queueing: 1 found, 0 queued, 0');
  } finally {
    progress.clear();
  }
  assert.ok(!terminal.text.includes('skipped'), 'the progress line was drawn wider than the terminal');
  assert.ok(!terminal.text.includes('\x1b[?7l'), 'line wrapping was turned off');
});

test('when stdout is the same terminal, the lines are printed on it above the progress line', async () => {
  const terminal = new FakeTerminal();
  const written: string[] = [];
  const progress = new EnqueueProgress({ stream: terminal, linesHere: true }, (line) => written.push(line));
  try {
    progress.inputSettled(queued('a', 1));
    await until(terminal, 'queueing: 1 found');
    progress.line('enqueued       /in/a.pdf  a  1 page');
    await until(terminal, 'enqueued       /in/a.pdf  a  1 page\n');
    const line = terminal.text.indexOf('enqueued       /in/a.pdf');
    await until(terminal, 'queueing: 1 found', line); // drawn again below the line, though its counts did not change
  } finally {
    progress.clear();
  }
  assert.deepEqual(written, []);
});

test('when stdout is not the terminal, the lines go to stdout and never onto the terminal', () => {
  const terminal = new FakeTerminal();
  const written: string[] = [];
  const progress = new EnqueueProgress({ stream: terminal, linesHere: false }, (line) => written.push(line));
  progress.line('rejected       /in/notes.txt: unsupported document type');
  progress.clear();
  assert.deepEqual(written, ['rejected       /in/notes.txt: unsupported document type']);
  assert.ok(!terminal.text.includes('rejected       /in/notes.txt'));
});

test('while waiting, the bar follows pages finished and documents finished, each page counted once', async () => {
  const terminal = new FakeTerminal();
  const progress = new EnqueueProgress({ stream: terminal, linesHere: false }, () => {});
  try {
    progress.clear();
    progress.waitFor([queued('a', 3), queued('b', 1)]);
    await until(terminal, 'pages 0/4, documents 0/2 finished');
    progress.pagesFinished('a', 1);
    progress.pagesFinished('elsewhere', 5); // another command's document
    await until(terminal, 'pages 1/4, documents 0/2 finished');
    progress.documentFinished('a'); // its other pages finished before they were heard of
    await until(terminal, 'pages 3/4, documents 1/2 finished');
    progress.pagesFinished('a', 1); // late news of a page already counted
    progress.documentFinished('a');
    progress.pagesFinished('b', 1);
    progress.documentFinished('b');
    await until(terminal, `waiting: [${'='.repeat(20)}] pages 4/4, documents 2/2 finished`);
    assert.ok(!terminal.text.includes('pages 5/4') && !terminal.text.includes('documents 3/2'));
  } finally {
    progress.clear();
  }
  assert.ok(terminal.text.endsWith(CLEAR_TO_END));
});
