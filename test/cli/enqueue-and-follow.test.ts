// What `enqueue --wait` and `run` do, through a real Redis and real workers on a tiny V1 checkpoint:
// an encrypted PDF read with the right password and rejected with a wrong one, the password nowhere
// in clear (Redis, storage, logs); pages rendered by their longest side; the waiting bar fed by page
// events.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, beforeEach, describe, test } from 'node:test';

import type { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';

import { EXIT_ALL_DONE, EXIT_INTERRUPTED, EXIT_SOME_FAILED } from '../../src/cli/document-report.js';
import { enqueueAndFollow } from '../../src/cli/enqueue-and-follow.js';
import type { TerminalStream } from '../../src/cli/enqueue-progress.js';
import { PdfRenderer } from '../../src/documents/document.js';
import type { PdfInput, PdfRenderOptions } from '../../src/documents/pdf-renderer.js';
import { OcrEngine } from '../../src/engine/ocr-engine.js';
import type { OcrJobOptions, PageJobData } from '../../src/jobs/job-types.js';
import type { DocumentResultJson } from '../../src/jobs/result-json.js';
import { documentId } from '../../src/producer/doc-id.js';
import { rejectedInputKey } from '../../src/jobs/storage-layout.js';
import { pageJobId } from '../../src/queue/job-ids.js';
import { jobKey, pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { startDocumentWorker } from '../../src/worker/document-worker.js';
import { PagePipeline } from '../../src/worker/page-pipeline.js';
import { startPageWorker } from '../../src/worker/page-worker.js';
import { LETTER, makeEncryptedPdf, makePdf } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const PASSWORD = 'Tr0ub4dor&3';
/** Small pages in tiny mode, 8 tokens: a page in well under a second. */
const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 8 };

/** The PDF renderer, keeping the size of every page it renders. */
class SizeRecordingRenderer extends PdfRenderer {
  readonly sizes: Array<[number, number]> = [];

  override async render(input: PdfInput, pageIndex: number, options?: PdfRenderOptions): ReturnType<PdfRenderer['render']> {
    const image = await super.render(input, pageIndex, options);
    this.sizes.push([image.width, image.height]);
    return image;
  }
}

/** Stands in for a terminal; keeps what is drawn. */
class FakeTerminal extends Writable implements TerminalStream {
  readonly isTTY = true;
  readonly columns = 200;
  text = '';

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

describe('enqueue and follow', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let root: string;
  let inputDir: string;
  let locked: Buffer;
  let plain: Buffer;
  let engine: OcrEngine;
  let renderer: SizeRecordingRenderer;
  let storage: FileStorage;
  let logText: string;
  let logger: Logger;
  let workers: Worker[];
  let lines: string[];

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-enqueue-follow-'));
    inputDir = path.join(root, 'in');
    await mkdir(inputDir);
    locked = makeEncryptedPdf(PASSWORD);
    plain = await makePdf([LETTER, LETTER], 2);
    await writeFile(path.join(inputDir, 'locked.pdf'), locked);
    await writeFile(path.join(inputDir, 'plain.pdf'), plain);
    engine = await OcrEngine.load(await tinyCheckpoint('v1'), { threads: 2 });
    renderer = new SizeRecordingRenderer();
  });
  beforeEach(async () => {
    await redis.flush();
    storage = new FileStorage(await mkdtemp(path.join(root, 'storage-')));
    renderer.sizes.length = 0;
    logText = '';
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logText += chunk.toString();
        done();
      },
    });
    logger = pino({ level: 'debug' }, sink);
    workers = [];
    lines = [];
  });
  after(async () => {
    await renderer.close();
    await rm(root, { recursive: true, force: true });
  });

  function startWorkers({ documents = true } = {}): void {
    const connection = redisOptions(redis.url, 'worker');
    const pipeline = new PagePipeline({ engine, storage, renderer, logger, host: 'test-host', checkpointId: 'sha256:tiny-v1', synthetic: true });
    workers.push(startPageWorker({ pipeline, connection, logger }));
    if (documents) workers.push(startDocumentWorker({ storage, connection, logger }));
  }

  async function stopWorkers(): Promise<void> {
    await Promise.all(workers.map((worker) => worker.close()));
  }

  function follow(inputs: string[], options: { ocr?: OcrJobOptions; pdfPassword?: string; progress?: FakeTerminal; signal?: AbortSignal } = {}) {
    return enqueueAndFollow({
      inputs,
      enqueue: { ocr: options.ocr ?? OCR, storage, pdfPassword: options.pdfPassword },
      redisUrl: redis.url,
      wait: true,
      write: (line) => lines.push(line),
      progress: options.progress && { stream: options.progress, linesHere: false },
      signal: options.signal,
    });
  }

  test('with the right password the encrypted PDF is read like any other', async () => {
    startWorkers();
    const status = await follow([path.join(inputDir, 'locked.pdf')], { pdfPassword: PASSWORD }).finally(stopWorkers);
    assert.equal(status, EXIT_ALL_DONE, lines.join('\n'));
    const docId = documentId(locked, OCR);
    const document = JSON.parse((await storage.get(`results/${docId}/document.json`)).toString()) as DocumentResultJson;
    assert.deepEqual({ pages: document.pages.map(({ page }) => page), failedPages: document.failedPages }, { pages: [1], failedPages: [] });
    assert.ok(lines.some((line) => /^done +.*locked\.pdf  →  .*document\.md$/.test(line)), lines.join('\n'));
  });

  test('the password travels sealed: Redis, the stored files and the logs never hold it in clear', async () => {
    startWorkers();
    await follow([path.join(inputDir, 'locked.pdf')], { pdfPassword: PASSWORD }).finally(stopWorkers);
    const docId = documentId(locked, OCR);
    const client = new Redis(redis.url);
    try {
      const pageJob = JSON.parse((await client.hget(jobKey(pageQueue('v1'), pageJobId(docId, 1, 1)), 'data')) ?? '{}') as PageJobData;
      assert.ok(pageJob.pdfPassword !== undefined, 'the page job carries no password: this test would prove nothing');
      const everything = await redisContents(client);
      assert.ok(everything.length > 0);
      assert.ok(!everything.includes(PASSWORD), 'Redis holds the password in clear');
    } finally {
      client.disconnect();
    }
    assert.ok(logText.includes(docId), 'the workers logged nothing about the document');
    assert.ok(!logText.includes(PASSWORD), 'a log line holds the password');
    assert.ok(!(await filesUnder(storage.root)).includes(PASSWORD), 'a stored file holds the password');
  });

  test('with a wrong password the encrypted PDF is rejected with the reason, and the other documents are read', async () => {
    startWorkers();
    const status = await follow([inputDir], { pdfPassword: 'guess' }).finally(stopWorkers);
    assert.equal(status, EXIT_SOME_FAILED);
    const uri = path.join(inputDir, 'locked.pdf');
    assert.ok(lines.includes(`rejected       ${uri}: encrypted PDF: the password is incorrect (check --password-env NAME or --password P)`), lines.join('\n'));
    const record = JSON.parse((await storage.get(rejectedInputKey(uri))).toString()) as { reason: string };
    assert.equal(record.reason, 'encrypted PDF: the password is incorrect (check --password-env NAME or --password P)');
    assert.ok(lines.includes('1 document finished: 1 complete, 0 with failed pages, 0 failed'), lines.join('\n'));
    assert.ok(!(await filesUnder(storage.root)).includes('guess'));
  });

  test('longestSide reaches the render stage: every page is rendered with its longer side that long', async () => {
    startWorkers();
    const ocr: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', longestSide: 400, maxNewTokens: 8 };
    const status = await follow([inputDir], { ocr, pdfPassword: PASSWORD }).finally(stopWorkers);
    assert.equal(status, EXIT_ALL_DONE, lines.join('\n'));
    // Three Letter pages (612 × 792 points): 400 / 792 × 612 = 309.1.
    assert.deepEqual(renderer.sizes, [[309, 400], [309, 400], [309, 400]]);
    assert.ok(await storage.exists(`results/${documentId(plain, ocr)}/_DONE`));
  });

  test('on a terminal the waiting bar counts finished pages as they are heard of; the lines stay the same', async () => {
    startWorkers({ documents: false }); // pages finish, documents never do
    const terminal = new FakeTerminal();
    const stop = new AbortController();
    const following = follow([path.join(inputDir, 'plain.pdf')], { progress: terminal, signal: stop.signal });
    try {
      await until(() => terminal.text.includes('pages 2/2, documents 0/1 finished'), () => terminal.text.slice(-300));
    } finally {
      stop.abort();
    }
    assert.equal(await following.finally(stopWorkers), EXIT_INTERRUPTED);
    assert.match(terminal.text, /queueing: 1 found, 1 queued, 0 skipped, 0 rejected, pages queued: 2/);
    assert.deepEqual(lines.map((line) => line.split(/ {2,}/)[0]), [
      'enqueued',
      '1 input document: 1 enqueued (2 pages), 0 already done, 0 already queued, 0 rejected',
      'manifest',
      'interrupted with 1 document unfinished: the same command again resumes them',
    ]);
  });
});

/** Every key's contents, whatever its type, as one string. */
async function redisContents(client: Redis): Promise<string> {
  const parts: string[] = [];
  for (const key of await client.keys('*')) {
    const type = await client.type(key);
    if (type === 'string') parts.push((await client.get(key)) ?? '');
    else if (type === 'hash') parts.push(JSON.stringify(await client.hgetall(key)));
    else if (type === 'list') parts.push(JSON.stringify(await client.lrange(key, 0, -1)));
    else if (type === 'set') parts.push(JSON.stringify(await client.smembers(key)));
    else if (type === 'zset') parts.push(JSON.stringify(await client.zrange(key, 0, -1)));
    else if (type === 'stream') parts.push(JSON.stringify(await client.xrange(key, '-', '+')));
    else assert.fail(`unexpected Redis type ${type} of ${key}`);
  }
  return parts.join('\n');
}

/** Every file under `dir`, as one latin1 string. */
async function filesUnder(dir: string): Promise<string> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
  return (await Promise.all(files.map((file) => readFile(file, 'latin1')))).join('\n');
}

async function until(condition: () => boolean, shown: () => string, timeoutMs = 60_000): Promise<void> {
  for (let waited = 0; !condition(); waited += 50) {
    if (waited > timeoutMs) assert.fail(`gave up waiting; the terminal shows ${JSON.stringify(shown())}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
