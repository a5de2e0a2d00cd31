// How the queue pipeline scales with worker processes: the same batch of single-page documents is
// read by 1, 2 and 3 `scriptorium work` processes (one engine thread each) sharing a private Redis
// and a file:// storage, and each run reports pages per minute and checks that every page was read
// exactly once and none failed.
//
//   npm run build && node bench/queue/scaling.mjs [--workers 1,2,3] [--docs 24] [--max-tokens 200]
//                                           [--mode base] [--model DIR]
//
// The documents are one-page PDFs of text like `scriptorium samples` writes; the model is --model,
// else the synthetic tiny V3 checkpoint (random weights: every stage is real, the text is not, and
// --max-tokens bounds each page). The clock runs from enqueueing, with every worker started and
// registered, until the last document is assembled.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Redis } from 'ioredis';
import { PDFDocument, StandardFonts } from 'pdf-lib';

import { resolveModelDir } from '../../dist/src/model/model-resolve.js';
import { loadModelConfig } from '../../dist/src/engine/model-config.js';
import { enqueueDocuments } from '../../dist/src/producer/enqueue.js';
import { startEmbeddedRedis } from '../../dist/src/queue/embedded-redis.js';
import { listLiveWorkers } from '../../dist/src/queue/live-workers.js';
import { redisOptions } from '../../dist/src/queue/redis.js';
import { FileStorage } from '../../dist/src/storage/file-storage.js';

const MAIN = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '1,2,3' },
    docs: { type: 'string', default: '24' },
    'max-tokens': { type: 'string', default: '200' },
    mode: { type: 'string', default: 'base' },
    model: { type: 'string' },
  },
});
const workerCounts = values.workers.split(',').map(Number);
const docCount = Number(values.docs);
const maxNewTokens = Number(values['max-tokens']);
if (!workerCounts.every((n) => Number.isInteger(n) && n >= 1) || !(Number.isInteger(docCount) && docCount >= 1) || !(maxNewTokens >= 1)) {
  throw new Error('--workers takes counts like 1,2,3; --docs and --max-tokens positive integers');
}

const model = await resolveModelDir(values.model);
const { variant } = await loadModelConfig(model.dir);
const ocr = { variant, task: variant === 'v3' ? 'parse' : 'markdown', mode: values.mode, dpi: 144, maxNewTokens };
const root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-scaling-'));
try {
  const inputs = path.join(root, 'inputs');
  await mkdir(inputs);
  for (let i = 1; i <= docCount; i++) await writeFile(path.join(inputs, `memo-${String(i).padStart(3, '0')}.pdf`), await onePagePdf(i));

  const rows = [];
  for (const count of workerCounts) rows.push(await measure(count, inputs, path.join(root, `run-${count}`)));
  process.stdout.write(`\n${docCount} one-page documents, ${variant} ${model.synthetic ? 'synthetic tiny' : model.dir}, mode ${ocr.mode}, up to ${maxNewTokens} tokens a page, ${os.cpus().length} CPUs\n`);
  process.stdout.write('workers  seconds  pages/min  vs 1 worker  pages read once  failed\n');
  for (const row of rows) {
    const speedup = (row.pagesPerMinute / rows[0].pagesPerMinute).toFixed(2);
    process.stdout.write(
      `${String(row.workers).padStart(7)}  ${row.seconds.toFixed(1).padStart(7)}  ${row.pagesPerMinute.toFixed(1).padStart(9)}  ${speedup.padStart(11)}  ${`${row.readOnce}/${docCount}`.padStart(15)}  ${String(row.failed).padStart(6)}\n`,
    );
  }
  if (rows.some((row) => row.readOnce !== docCount || row.failed > 0)) process.exitCode = 1;
} finally {
  await rm(root, { recursive: true, force: true });
}

async function measure(workerCount, inputs, dir) {
  const redis = await startEmbeddedRedis();
  const client = new Redis(redis.url);
  const storage = new FileStorage(path.join(dir, 'storage'));
  const env = { ...process.env, REDIS_URL: redis.url, LOG_LEVEL: 'info' };
  const workers = Array.from({ length: workerCount }, () => {
    const child = spawn(process.execPath, [MAIN, 'work', '--model', model.dir, '--storage', storage.root, '--threads', '1'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    const worker = { child, stderr: '', exited: new Promise((resolve) => child.once('exit', resolve)) };
    child.stderr.on('data', (chunk) => (worker.stderr += chunk));
    return worker;
  });
  try {
    await until(
      async () => {
        const exited = workers.find((worker) => worker.child.exitCode !== null || worker.child.signalCode !== null);
        if (exited) throw new Error(`a worker exited while starting:\n${exited.stderr}`);
        return (await listLiveWorkers(client)).length === workerCount;
      },
      300_000,
      `${workerCount} live workers`,
    );
    process.stderr.write(`${workerCount} worker${workerCount === 1 ? '' : 's'} ready; enqueueing ${docCount} documents\n`);
    const started = performance.now();
    const { queued } = await enqueueDocuments([inputs], { ocr, storage, connection: redisOptions(redis.url, 'client') });
    await until(async () => (await Promise.all(queued.map(({ docId }) => storage.exists(`results/${docId}/_DONE`)))).every(Boolean), 3_600_000, 'every document');
    const seconds = (performance.now() - started) / 1000;

    let failed = 0;
    for (const { docId } of queued) {
      const document = JSON.parse(await readFile(path.join(storage.root, `results/${docId}/document.json`), 'utf8'));
      failed += document.failedPages.length;
    }
    await Promise.all(workers.map(async (worker) => {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }));
    // Every page done exactly once, by whichever worker: each worker logs 'page done' per page it stored.
    const done = workers.flatMap((worker) => worker.stderr.split('\n').filter((line) => line.includes('"msg":"page done"')).map((line) => JSON.parse(line)));
    const perPage = new Map();
    for (const line of done) perPage.set(`${line.docId} ${line.page}`, (perPage.get(`${line.docId} ${line.page}`) ?? 0) + 1);
    const readOnce = queued.filter(({ docId }) => perPage.get(`${docId} 1`) === 1).length;
    const row = { workers: workerCount, seconds, pagesPerMinute: (docCount / seconds) * 60, readOnce, failed };
    process.stderr.write(`${workerCount} worker${workerCount === 1 ? '' : 's'}: ${row.pagesPerMinute.toFixed(1)} pages/min\n`);
    return row;
  } finally {
    for (const worker of workers) worker.child.kill('SIGKILL');
    client.disconnect();
    await redis.close();
  }
}

async function onePagePdf(n) {
  const document = await PDFDocument.create();
  const font = await document.embedFont(StandardFonts.Helvetica);
  const page = document.addPage([612, 792]);
  const lines = [`Memo ${n}`, 'Revenue grew 12% over the previous quarter.', 'Operating costs stayed flat at 4.2 million.', `Reference number ${1000 + n}.`];
  lines.forEach((line, i) => page.drawText(line, { x: 72, y: 700 - i * 28, size: i === 0 ? 22 : 13, font }));
  return Buffer.from(await document.save());
}

async function until(condition, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
