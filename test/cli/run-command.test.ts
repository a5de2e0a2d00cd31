// `scriptorium run` end to end, as a user runs it: the CLI in a child process with its private
// redis-server, a tiny V1 checkpoint, a folder of documents in, results in the output folder.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import type { OcrJobOptions, Stage } from '../../src/jobs/job-types.js';
import type { DocumentResultJson, PageResultJson } from '../../src/jobs/result-json.js';
import { documentId } from '../../src/producer/doc-id.js';
import { LETTER, makeCorruptPdf, makeEncryptedPdf, makePdf, makePng } from '../support/make-documents.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const STAGES: Stage[] = ['queued', 'fetch', 'render', 'preprocess', 'encode', 'prefill', 'decode', 'postprocess', 'store', 'total'];
/** What the run below asks for: small pages in tiny mode, 8 tokens. */
const OCR: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 8 };

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

describe('scriptorium run', { skip: REDIS_SERVER_MISSING }, () => {
  let root: string;
  let inputDir: string;
  let out: string;
  let model: string;
  let pdfId: string;
  let pngId: string;
  let first: RunResult;

  const run = (inputs: string[], outDir: string) => runScriptorium(inputs, outDir, model);

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-queue-run-'));
    inputDir = path.join(root, 'in');
    out = path.join(root, 'out');
    await mkdir(inputDir);
    const pdf = await makePdf([LETTER, LETTER], 3);
    const png = await makePng();
    await writeFile(path.join(inputDir, 'report.pdf'), pdf);
    await writeFile(path.join(inputDir, 'scan.png'), png);
    await writeFile(path.join(inputDir, 'damaged.pdf'), makeCorruptPdf());
    pdfId = documentId(pdf, OCR);
    pngId = documentId(png, OCR);
    model = await tinyCheckpoint('v1');
    first = await run([inputDir], out);
  });
  after(() => rm(root, { recursive: true, force: true }));

  const results = (docId: string, name: string) => path.join(out, 'results', docId, name);
  /** The folder `run` links to an input's results, named after the input below its argument. */
  const byInput = (name: string) => path.join(out, 'by-input', 'in', name);

  test('prints where each document’s markdown is, through a folder named after its input', () => {
    assert.match(first.stdout, new RegExp(`^done +${escape(path.join(inputDir, 'report.pdf'))}  →  ${escape(path.join(byInput('report.pdf'), 'document.md'))}$`, 'm'));
    assert.match(first.stdout, new RegExp(`^done +${escape(path.join(inputDir, 'scan.png'))}  →  ${escape(path.join(byInput('scan.png'), 'document.md'))}$`, 'm'));
  });

  test('each input’s name under by-input/ opens its document’s results folder', async () => {
    for (const [name, docId] of [['report.pdf', pdfId], ['scan.png', pngId]] as const) {
      assert.ok((await lstat(byInput(name))).isSymbolicLink(), name);
      assert.equal(await readFile(path.join(byInput(name), 'document.md'), 'utf8'), await readFile(results(docId, 'document.md'), 'utf8'));
    }
    await assert.rejects(lstat(byInput('damaged.pdf')), { code: 'ENOENT' });
  });

  test('reports the corrupt PDF with its reason and exits 3, having finished the others', () => {
    assert.match(first.stdout, new RegExp(`^rejected +${escape(path.join(inputDir, 'damaged.pdf'))}: corrupt PDF: .+$`, 'm'));
    assert.match(first.stdout, /^2 documents finished: 2 complete, 0 with failed pages, 0 failed$/m);
    assert.equal(first.code, 3, first.stderr);
  });

  test('writes document.md, document.json and _DONE for each document', async () => {
    for (const docId of [pdfId, pngId]) {
      for (const name of ['document.md', 'document.json', '_DONE']) assert.ok((await stat(results(docId, name))).isFile(), `${docId}/${name}`);
    }
    const document = JSON.parse(await readFile(results(pdfId, 'document.json'), 'utf8')) as DocumentResultJson;
    assert.deepEqual(document.pages.map(({ page, key }) => ({ page, key })), [
      { page: 1, key: `results/${pdfId}/pages/0001.json` },
      { page: 2, key: `results/${pdfId}/pages/0002.json` },
    ]);
    assert.deepEqual(document.failedPages, []);
    assert.equal(document.source.uri, path.join(inputDir, 'report.pdf'));
  });

  test('every page JSON times every stage', async () => {
    for (const [docId, page] of [[pdfId, 1], [pdfId, 2], [pngId, 1]] as const) {
      const json = JSON.parse(await readFile(results(docId, `pages/000${page}.json`), 'utf8')) as PageResultJson;
      assert.deepEqual(Object.keys(json.timings_ms).sort(), [...STAGES].sort());
      for (const stage of STAGES) assert.ok(json.timings_ms[stage] >= 0, `${docId} page ${page} ${stage}: ${json.timings_ms[stage]}`);
      assert.ok(json.timings_ms.total > 0);
      assert.deepEqual({ variant: json.model.variant, mode: json.model.mode, attempt: json.worker.attempt }, { variant: 'v1', mode: 'tiny', attempt: 1 });
      assert.match(json.model.checkpoint, /^sha256:[0-9a-f]{64}$/);
    }
  });

  test('running again reads nothing again: finished documents are reported as already done', async () => {
    const pageJson = results(pdfId, 'pages/0001.json');
    const before = (await stat(pageJson)).mtimeMs;
    const again = await run([inputDir], out);
    assert.match(again.stdout, /^3 input documents: 0 enqueued \(0 pages\), 2 already done, 0 already queued, 1 rejected$/m);
    assert.match(again.stdout, new RegExp(`^already done +${escape(path.join(inputDir, 'scan.png'))}  ${pngId}  1 page  →  ${escape(path.join(byInput('scan.png'), 'document.md'))}$`, 'm'));
    assert.equal((await stat(pageJson)).mtimeMs, before);
  });

  test('--max-queued-pages: each document waits for room in the page queue, and every one is read', async () => {
    const result = await runScriptorium([inputDir], path.join(root, 'out-room'), model, { args: ['--max-queued-pages', '1'] });
    assert.equal(result.code, 3, result.stdout + result.stderr); // the damaged PDF
    assert.match(result.stderr, /waiting for room for .*scan\.png: the queue is full: \{scriptorium\}:pages-v1 holds 2 page jobs and this document adds 1, over the limit of 1/);
    assert.match(result.stdout, /^2 documents finished: 2 complete, 0 with failed pages, 0 failed$/m);
  });

  test('exits 0 when every input was read', async () => {
    const result = await run([path.join(inputDir, 'scan.png')], path.join(root, 'out-png'));
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /^1 document finished: 1 complete, 0 with failed pages, 0 failed$/m);
  });
});

describe('scriptorium run on an encrypted PDF', { skip: REDIS_SERVER_MISSING }, () => {
  test('--password-env reads it; a wrong --password rejects it with the reason; the password is never printed', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-queue-run-locked-'));
    try {
      const locked = path.join(root, 'locked.pdf');
      await writeFile(locked, makeEncryptedPdf('0pen sesame'));
      const model = await tinyCheckpoint('v1');
      const out = path.join(root, 'out');

      const wrong = await runScriptorium([locked], out, model, { args: ['--password', 'open sesame'] });
      assert.equal(wrong.code, 3, wrong.stdout + wrong.stderr);
      assert.match(wrong.stdout, new RegExp(`^rejected +${escape(locked)}: encrypted PDF: the password is incorrect \\(check --password-env NAME or --password P\\)$`, 'm'));

      const right = await runScriptorium([locked], out, model, { args: ['--password-env', 'LOCKED_PDF_KEY'], env: { LOCKED_PDF_KEY: '0pen sesame' } });
      assert.equal(right.code, 0, right.stdout + right.stderr);
      assert.match(right.stdout, new RegExp(`^done +${escape(locked)}  →  .+document\\.md$`, 'm'));

      for (const output of [wrong.stdout, wrong.stderr, right.stdout, right.stderr]) assert.ok(!output.includes('sesame'), output);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

/** `scriptorium run INPUTS --out OUT` on `model` with small pages in tiny mode, 8 tokens, and a private redis-server. */
function runScriptorium(inputs: string[], out: string, model: string, extra: { args?: string[]; env?: NodeJS.ProcessEnv } = {}): Promise<RunResult> {
  const args = [MAIN, 'run', ...inputs, '--out', out, '--model', model, '--mode', 'tiny', '--dpi', '36', '--max-tokens', '8', '--threads', '2', ...(extra.args ?? [])];
  const env = { ...process.env, ...extra.env };
  delete env.REDIS_URL; // the private redis-server
  return new Promise((resolve) => {
    execFile(process.execPath, args, { env, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
