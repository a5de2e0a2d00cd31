// `scriptorium ocr` end to end on tiny checkpoints: a 2-page PDF and a PNG for every variant,
// markdown or JSON on stdout and a profile on stderr.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import type { Stage } from '../../src/jobs/job-types.js';
import type { PageResultJson } from '../../src/jobs/result-json.js';
import { LETTER, makePdf, makePng } from '../support/make-documents.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const run = promisify(execFile);
const STAGES: Stage[] = ['queued', 'fetch', 'render', 'preprocess', 'encode', 'prefill', 'decode', 'postprocess', 'store', 'total'];
const cli = path.resolve('dist/src/cli/main.js');
let work: string;
let pdf: string;
let png: string;

before(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-ocr-'));
  pdf = path.join(work, 'two-pages.pdf');
  png = path.join(work, 'page.png');
  await writeFile(pdf, await makePdf([LETTER, LETTER]));
  await writeFile(png, await makePng());
});

after(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('scriptorium ocr', () => {
  for (const variant of ['v1', 'v2', 'v3'] as Variant[]) {
    test(`${variant}: a 2-page PDF gives one JSON record per page with every stage timed`, async () => {
      const model = await tinyCheckpoint(variant);
      const { stdout, stderr } = await run(process.execPath, [cli, 'ocr', pdf, '--model', model, '--max-tokens', '4', '--dpi', '72', '--format', 'json', '--profile']);
      const output = JSON.parse(stdout);
      assert.deepEqual(output.pages.map((p: PageResultJson) => p.source.page), [1, 2]);
      for (const page of output.pages as PageResultJson[]) {
        assert.equal(page.model.variant, variant);
        assert.match(page.model.checkpoint, /^sha256:[0-9a-f]{64}$/);
        assert.deepEqual(Object.keys(page.timings_ms).sort(), [...STAGES].sort());
        assert.equal(page.tokens.generated, 4);
        assert.equal(typeof page.markdown, 'string');
      }
      assert.deepEqual(output.failedPages, []);
      assert.match(stderr, /^ *page +render +preprocess +encode +prefill +decode +postprocess/m);
      assert.match(stderr, /^ *total /m);
    });

    test(`${variant}: a PNG prints markdown`, async () => {
      const model = await tinyCheckpoint(variant);
      const { stdout } = await run(process.execPath, [cli, 'ocr', png, '--model', model, '--max-tokens', '3']);
      assert.ok(stdout.length > 0);
    });
  }

  test('V3 parse-multi reads the PDF in one pass', async () => {
    const model = await tinyCheckpoint('v3');
    const { stdout } = await run(process.execPath, [cli, 'ocr', pdf, '--model', model, '--task', 'parse-multi', '--max-tokens', '3', '--dpi', '72', '--format', 'json']);
    const output = JSON.parse(stdout);
    assert.deepEqual(output.pages.map((p: PageResultJson) => p.source.page), [1, 2]);
    assert.equal(output.pages[0].tokens.image, 273);
    assert.deepEqual(output.pages.map((p: PageResultJson) => p.model.task), ['parse-multi', 'parse-multi']);
  });

  test('options are checked as enqueue checks them: a task the variant lacks is a usage error', async () => {
    const model = await tinyCheckpoint('v1');
    await assert.rejects(run(process.execPath, [cli, 'ocr', pdf, '--model', model, '--task', 'parse']), (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 2);
      assert.match(error.stderr, /--task/);
      return true;
    });
  });

  test('--pages past the end is a usage error naming the page count', async () => {
    const model = await tinyCheckpoint('v1');
    await assert.rejects(run(process.execPath, [cli, 'ocr', pdf, '--model', model, '--pages', '2-5']), /goes past the last page \(2\)/);
  });

  test('a text file is refused with a clear reason', async () => {
    const text = path.join(work, 'notes.txt');
    await writeFile(text, 'just some notes\n');
    await assert.rejects(run(process.execPath, [cli, 'ocr', text, '--model', await tinyCheckpoint('v1')]), /text\/plain content is not a supported document/);
  });

  test('a missing file is named, without a raw ENOENT', async () => {
    const missing = path.join(work, 'missing.pdf');
    await assert.rejects(run(process.execPath, [cli, 'ocr', missing]), (error: { stderr: string }) => {
      assert.match(error.stderr, new RegExp(`^scriptorium: ${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: no such file$`, 'm'));
      assert.doesNotMatch(error.stderr, /ENOENT/);
      return true;
    });
  });

  test('an s3:// URI says that ocr reads local files and how to read S3 objects', async () => {
    await assert.rejects(run(process.execPath, [cli, 'ocr', 's3://bucket/scan.pdf']), (error: { stderr: string }) => {
      assert.match(error.stderr, /s3:\/\/bucket\/scan\.pdf: ocr reads a local file; read S3 objects with `scriptorium run s3:\/\/bucket\/scan\.pdf --out DIR`/);
      assert.doesNotMatch(error.stderr, /ENOENT/);
      return true;
    });
  });
});
