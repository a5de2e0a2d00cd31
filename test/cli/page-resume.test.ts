// Page-level resume and retry on a real Redis with the built CLI: a `run` killed mid-document is run
// again and reads only the pages without a stored result; a document assembled with a failed page
// gets _FAILED_PAGES instead of _DONE, and `scriptorium retry --failed` reads exactly that page again;
// `scriptorium retry --flagged` reads the pages flagged for review again with the options it is given.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Queue } from 'bullmq';
import { pino } from 'pino';

import { startOcrWorkers } from '../../src/worker/ocr-workers.js';
import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import type { DocumentResultJson, PageResultJson } from '../../src/jobs/result-json.js';
import { enqueueDocuments } from '../../src/producer/enqueue.js';
import { startEmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { pageJobId } from '../../src/queue/job-ids.js';
import { pageQueue } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { POISON_PAGE, READING_LINE } from '../support/fault-engine.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';
import { MAIN, waitUntil } from '../support/worker-processes.js';

const FAULT_ENGINE = fileURLToPath(new URL('../support/fault-engine.js', import.meta.url));
const silent = pino({ level: 'silent' });
const page = (n: number) => `pages/${String(n).padStart(4, '0')}.json`;

interface Cli {
  exited: Promise<number | null>;
  stdout: () => string;
  stderr: () => string;
  kill(): void;
}

/** The built CLI as a child process, with the fault-engine preload (which logs every page it reads). */
function cli(args: string[], env: NodeJS.ProcessEnv): Cli {
  const child = spawn(process.execPath, ['--import', FAULT_ENGINE, MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return {
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
    stdout: () => stdout,
    stderr: () => stderr,
    kill: () => child.kill('SIGKILL'),
  };
}

/** The page sizes the engine was asked to read, one entry per page. */
const pagesRead = (stderr: string) =>
  stderr
    .split('\n')
    .filter((line) => line.startsWith(READING_LINE))
    .flatMap((line) => line.slice(READING_LINE.length).trim().split(','));

describe('page-level resume and retry', { skip: REDIS_SERVER_MISSING }, () => {
  let work: string;
  let model: string;

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-resume-'));
    model = await tinyCheckpoint('v1');
  });
  after(() => rm(work, { recursive: true, force: true }));

  test('a run killed mid-document reads only the pages without a stored result when run again', async () => {
    // Page 3 renders at the poison size (72 dpi: one pixel per point), which the fault engine never finishes.
    const input = path.join(work, 'five-pages.pdf');
    await writeFile(input, await makePdf([LETTER, LETTER, [POISON_PAGE.width, POISON_PAGE.height], LETTER, LETTER], 2));
    const out = path.join(work, 'out');
    const args = ['run', input, '--out', out, '--model', model, '--mode', 'tiny', '--dpi', '72', '--max-tokens', '6', '--batch', '1', '--threads', '1'];
    const storage = new FileStorage(out);

    const firstRedis = await startEmbeddedRedis();
    const first = cli(args, { REDIS_URL: firstRedis.url, SCRIPTORIUM_TEST_FAULT: 'hang' });
    let docId = '';
    try {
      await waitUntil(
        async () => {
          docId = /results\/([0-9a-f]{32})/.exec(first.stdout())?.[1] ?? (await firstDocId(storage)) ?? '';
          if (docId === '') return false;
          const stored = await Promise.all([1, 2, 4, 5].map((n) => storage.exists(`results/${docId}/${page(n)}`)));
          return stored.every(Boolean) && pagesRead(first.stderr()).includes(`${POISON_PAGE.width}x${POISON_PAGE.height}`);
        },
        120_000,
        'pages 1, 2, 4 and 5 stored while page 3 is stuck',
      );
    } finally {
      first.kill();
      await first.exited;
      await firstRedis.close(); // the killed run's private Redis goes with it
    }
    assert.equal(await storage.exists(`results/${docId}/${page(3)}`), false);
    assert.equal(await storage.exists(`results/${docId}/_DONE`), false);
    const before = await Promise.all([1, 2, 4, 5].map((n) => readFile(path.join(out, 'results', docId, page(n)))));

    const secondRedis = await startEmbeddedRedis();
    try {
      const second = cli(args, { REDIS_URL: secondRedis.url, SCRIPTORIUM_TEST_FAULT: '' });
      assert.equal(await second.exited, 0, second.stderr());
      assert.deepEqual(pagesRead(second.stderr()), [`${POISON_PAGE.width}x${POISON_PAGE.height}`], 'only page 3 is read again');
      const pages = new Queue(pageQueue('v1').name, { connection: redisOptions(secondRedis.url, 'client'), prefix: pageQueue('v1').prefix });
      assert.deepEqual(await pages.getJobCounts('completed', 'failed'), { completed: 1, failed: 0 });
      await pages.close();
    } finally {
      await secondRedis.close();
    }
    const after = await Promise.all([1, 2, 4, 5].map((n) => readFile(path.join(out, 'results', docId, page(n)))));
    assert.deepEqual(after, before, 'the stored pages are kept as they were');
    const document = JSON.parse((await storage.get(`results/${docId}/document.json`)).toString()) as DocumentResultJson;
    assert.deepEqual(document.pages.map((p) => p.page), [1, 2, 3, 4, 5]);
    assert.equal(await storage.exists(`results/${docId}/_DONE`), true);
  });

  test('a document with a failed page gets _FAILED_PAGES, and retry --failed reads exactly that page again', async () => {
    const redis = await startEmbeddedRedis();
    const storage = new FileStorage(path.join(work, 'retry'));
    const connection = redisOptions(redis.url, 'client');
    const pages = new Queue(pageQueue('v1').name, { connection, prefix: pageQueue('v1').prefix });
    try {
      const input = path.join(work, 'three-pages.pdf');
      await writeFile(input, await makePdf([LETTER, LETTER, LETTER], 3));
      const ocr: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 6 };
      const { docId } = (await enqueueDocuments([input], { ocr, storage, connection })).queued[0];
      await (await pages.getJob(pageJobId(docId, 2, 2)))?.remove(); // page 2 never reports: it fails
      const running = await startOcrWorkers({ model: { dir: model, synthetic: true }, checkpointId: 'sha256:tiny-v1', threads: 1, storage, redisUrl: redis.url, batch: 2, logger: silent });
      try {
        await waitUntil(() => storage.exists(`results/${docId}/_FAILED_PAGES`), 120_000, 'the document assembled with a failed page');
        assert.equal(await storage.exists(`results/${docId}/_DONE`), false);
        const marker = JSON.parse((await storage.get(`results/${docId}/_FAILED_PAGES`)).toString());
        assert.deepEqual(marker.failedPages, [{ page: 2, reason: 'no page result was reported' }]);
        const kept = await Promise.all([1, 3].map((n) => storage.get(`results/${docId}/${page(n)}`)));

        const retry = cli(['retry', '--failed', '--storage', storage.root], { REDIS_URL: redis.url, SCRIPTORIUM_TEST_FAULT: '' });
        assert.equal(await retry.exited, 0, retry.stderr());
        assert.equal(retry.stdout(), `${docId}: 1 failed page queued again (${input})\n`);
        assert.deepEqual(
          await Promise.all([1, 2, 3].map(async (n) => (await pages.getJob(pageJobId(docId, n, n))) !== undefined)),
          [false, true, false],
          'only page 2 is queued',
        );
        await waitUntil(() => storage.exists(`results/${docId}/_DONE`), 120_000, 'the document assembled again');
        assert.equal(await storage.exists(`results/${docId}/_FAILED_PAGES`), false);
        const document = JSON.parse((await storage.get(`results/${docId}/document.json`)).toString()) as DocumentResultJson;
        assert.deepEqual({ pages: document.pages.map((p) => p.page), failed: document.failedPages }, { pages: [1, 2, 3], failed: [] });
        assert.deepEqual(await Promise.all([1, 3].map((n) => storage.get(`results/${docId}/${page(n)}`))), kept);
      } finally {
        await running.close();
      }
    } finally {
      await pages.close();
      await redis.close();
    }
  });
});

describe('retry --flagged', { skip: REDIS_SERVER_MISSING }, () => {
  let work: string;
  let model: string;

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-retry-flagged-'));
    model = await tinyCheckpoint('v1');
  });
  after(() => rm(work, { recursive: true, force: true }));

  test('reads only the pages flagged for review again, with the options given, over their old results', async () => {
    const redis = await startEmbeddedRedis();
    const storage = new FileStorage(path.join(work, 'flagged'));
    const connection = redisOptions(redis.url, 'client');
    const pages = new Queue(pageQueue('v1').name, { connection, prefix: pageQueue('v1').prefix });
    const readJson = async <T>(key: string) => JSON.parse((await storage.get(key)).toString()) as T;
    try {
      const input = path.join(work, 'three-pages.pdf');
      await writeFile(input, await makePdf([LETTER, LETTER, LETTER], 4));
      const ocr: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 6 };
      const { docId } = (await enqueueDocuments([input], { ocr, storage, connection })).queued[0];
      const running = await startOcrWorkers({ model: { dir: model, synthetic: true }, checkpointId: 'sha256:tiny-v1', threads: 1, storage, redisUrl: redis.url, batch: 2, logger: silent });
      try {
        await waitUntil(() => storage.exists(`results/${docId}/_DONE`), 120_000, 'the document assembled');
        // The random weights write on to the 6-token budget on every page; pages 1 and 3 are made to
        // look as if they had ended on their own, so that page 2 alone is flagged.
        const second = await readJson<PageResultJson>(`results/${docId}/${page(2)}`);
        assert.ok(second.flags?.includes('max_tokens') && second.needs_review, `page 2 flags: ${String(second.flags)}`);
        for (const n of [1, 3]) {
          const result = await readJson<PageResultJson>(`results/${docId}/${page(n)}`);
          await storage.put(`results/${docId}/${page(n)}`, Buffer.from(JSON.stringify({ ...result, finish: 'eos', flags: [], needs_review: false })));
        }
        const assembled = await readJson<DocumentResultJson>(`results/${docId}/document.json`);
        await storage.put(`results/${docId}/document.json`, Buffer.from(JSON.stringify({ ...assembled, flagged: [{ page: 2, flags: second.flags }] })));
        const kept = await Promise.all([1, 3].map((n) => storage.get(`results/${docId}/${page(n)}`)));

        const retry = cli(['retry', '--flagged', docId, '--mode', 'small', '--max-tokens', '9', '--storage', storage.root], { REDIS_URL: redis.url, SCRIPTORIUM_TEST_FAULT: '' });
        assert.equal(await retry.exited, 0, retry.stderr());
        assert.equal(retry.stdout(), `${docId}: 1 flagged page (2) queued again, mode small, task markdown, 36 dpi, at most 9 tokens (${input})\n`);
        assert.deepEqual(
          await Promise.all([1, 2, 3].map(async (n) => (await pages.getJob(pageJobId(docId, n, n))) !== undefined)),
          [false, true, false],
          'only page 2 is queued',
        );
        await waitUntil(
          async () => (await readJson<DocumentResultJson>(`results/${docId}/document.json`)).completedAt !== assembled.completedAt,
          120_000,
          'the document assembled again',
        );
        const reread = await readJson<PageResultJson>(`results/${docId}/${page(2)}`);
        assert.deepEqual({ mode: reread.model.mode, dpi: reread.render.dpi }, { mode: 'small', dpi: 36 });
        assert.ok(reread.tokens.generated > 0 && reread.tokens.generated <= 9, `${reread.tokens.generated} tokens`);
        assert.deepEqual(await Promise.all([1, 3].map((n) => storage.get(`results/${docId}/${page(n)}`))), kept, 'the other pages keep their results');
        const document = await readJson<DocumentResultJson>(`results/${docId}/document.json`);
        assert.deepEqual(document.pages.map((p) => p.page), [1, 2, 3]);
        assert.deepEqual(document.flagged, reread.flags?.length ? [{ page: 2, flags: reread.flags }] : []);
        // The document's own options stay in its marker: a later retry starts from them again.
        assert.deepEqual((await readJson<{ options: OcrJobOptions }>(`results/${docId}/_DONE`)).options, ocr);
      } finally {
        await running.close();
      }
    } finally {
      await pages.close();
      await redis.close();
    }
  });

  test('refuses read options without --flagged, --failed with --flagged, and says why a document is not retried', async () => {
    const redis = await startEmbeddedRedis();
    try {
      const env = { REDIS_URL: redis.url, SCRIPTORIUM_TEST_FAULT: '' };
      const docId = 'e'.repeat(32);
      const withMode = cli(['retry', docId, '--mode', 'small', '--storage', work], env);
      assert.equal(await withMode.exited, 2);
      assert.match(withMode.stderr(), /--mode goes with --flagged only/);
      const both = cli(['retry', '--failed', '--flagged', '--storage', work], env);
      assert.equal(await both.exited, 2);
      assert.match(both.stderr(), /give --failed or --flagged, not both/);
      const unknown = cli(['retry', '--flagged', docId, '--storage', work], env);
      assert.equal(await unknown.exited, 3);
      assert.equal(unknown.stdout(), `${docId}: not retried: it has not been assembled (unknown, or still being read)\n`);
    } finally {
      await redis.close();
    }
  });
});

/** The one docId under results/, once the run has stored anything. */
async function firstDocId(storage: FileStorage): Promise<string | undefined> {
  for await (const object of storage.list('results/', { recursive: true })) return /^results\/([0-9a-f]{32})\//.exec(object.key)?.[1];
  return undefined;
}
