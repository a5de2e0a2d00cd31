// `enqueue` against a full queue, on a real Redis: it waits for room (saying so, on stderr and on the
// progress line) and queues the document once page jobs drain; with --no-wait it stops at once,
// queueing nothing more, and the command exits with status 75 and its reason.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { after, before, beforeEach, describe, test } from 'node:test';

import { Queue } from 'bullmq';

import { EXIT_ALL_DONE, EXIT_NO_ROOM } from '../../src/cli/document-report.js';
import { enqueueAndFollow } from '../../src/cli/enqueue-and-follow.js';
import type { TerminalStream } from '../../src/cli/enqueue-progress.js';
import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import { documentId } from '../../src/producer/doc-id.js';
import { NoRoomError, QueueCapacity } from '../../src/queue/queue-capacity.js';
import { DOCUMENTS, pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { waitUntil } from '../support/worker-processes.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 8 };

class FakeTerminal extends Writable implements TerminalStream {
  readonly isTTY = true;
  readonly columns = 400;
  text = '';

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

describe('enqueue waiting for room', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let root: string;
  let inputDir: string;
  let docId: string;
  let pages: Queue;
  let documents: Queue;
  let capacity: QueueCapacity;

  /** Two page jobs of another producer fill the queue its limit of 2 allows. */
  const fillQueue = () => pages.addBulk([1, 2].map((n) => ({ name: `filler ${n}`, data: {}, opts: { jobId: `filler-${n}` } })));

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-enqueue-capacity-'));
    inputDir = path.join(root, 'in');
    await mkdir(inputDir);
    const pdf = await makePdf([LETTER], 4);
    await writeFile(path.join(inputDir, 'letter.pdf'), pdf);
    docId = documentId(pdf, OCR);
    const connection = redisOptions(redis.url, 'client');
    pages = new Queue(pageQueue('v1').name, { connection, prefix: DOCUMENTS.prefix });
    documents = new Queue(DOCUMENTS.name, { connection, prefix: DOCUMENTS.prefix });
    capacity = new QueueCapacity(redis.url, 2);
  });
  beforeEach(() => redis.flush());
  after(async () => {
    await Promise.all([pages.close(), documents.close(), capacity.close()]);
    await rm(root, { recursive: true, force: true });
  });

  const enqueue = (wait: boolean, notes: string[], progress?: FakeTerminal, signal?: AbortSignal) =>
    enqueueAndFollow({
      signal,
      inputs: [inputDir],
      enqueue: { ocr: OCR, storage: new FileStorage(path.join(root, `storage-${Date.now()}`)) },
      redisUrl: redis.url,
      wait: false,
      write: () => undefined,
      progress: progress === undefined ? undefined : { stream: progress, linesHere: false },
      room: { capacity, wait, pollMs: 50, note: (line) => notes.push(line) },
    });

  test('waits while the queue is full, then queues the document once pages drain', async () => {
    await fillQueue();
    const notes: string[] = [];
    const terminal = new FakeTerminal();
    let finished = false;
    const enqueued = enqueue(true, notes, terminal).finally(() => (finished = true));
    await waitUntil(() => notes.length > 0, 10_000, 'the note that it waits');
    assert.match(notes[0], /^waiting for room for .*letter\.pdf: the queue is full: \{scriptorium\}:pages-v1 holds 2 page jobs and this document adds 1, over the limit of 2/);
    await waitUntil(() => terminal.text.includes('waiting for room: the queue is full'), 10_000, 'the progress line says why it waits');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(finished, false, 'still waiting after several looks');
    assert.equal(await documents.getJob(docId), undefined, 'nothing queued while there is no room');

    await pages.remove('filler-1');
    assert.equal(await enqueued, EXIT_ALL_DONE);
    assert.equal(await (await documents.getJob(docId))?.getState(), 'waiting-children');
    assert.equal(notes.length, 1, 'one note per wait');
  });

  test('a stop (Ctrl-C in `run`) ends the wait for room at once', async () => {
    await fillQueue();
    const notes: string[] = [];
    const stop = new AbortController();
    let finished = false;
    const enqueued = enqueue(true, notes, undefined, stop.signal).finally(() => (finished = true));
    await waitUntil(() => notes.length > 0, 10_000, 'the note that it waits');
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(finished, false, 'waiting while the queue is full');
    stop.abort();
    await enqueued;
  });

  test('--no-wait stops at the first document without room and queues nothing more', async () => {
    await fillQueue();
    await assert.rejects(enqueue(false, []), (error: NoRoomError) => {
      assert.ok(error instanceof NoRoomError);
      assert.equal(error.refusal.reason, 'queue-full');
      return true;
    });
    assert.equal(await documents.getJob(docId), undefined);
  });

  test('the command exits with status 75 and says why (the limit from SCRIPTORIUM_MAX_QUEUED_PAGES)', async () => {
    await fillQueue();
    const child = spawn(process.execPath, [MAIN, 'enqueue', inputDir, '--variant', 'v1', '--mode', 'tiny', '--to', path.join(root, 'cli-storage'), '--no-wait'], {
      env: { ...process.env, REDIS_URL: redis.url, SCRIPTORIUM_MAX_QUEUED_PAGES: '2' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, EXIT_NO_ROOM, stderr);
    assert.match(stderr, /scriptorium enqueue: no room for .*letter\.pdf: the queue is full: .* --no-wait stops here: the documents before it stay queued/);
    assert.deepEqual(await documents.getJobCounts('waiting-children'), { 'waiting-children': 0 }, 'no document was queued');
  });
});
