// The page pipeline on tiny checkpoints and file:// storage: page jobs in (read at once, as a worker
// holds them), stored page results with stage timings out; failures stay with their own job.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';

import { pino } from 'pino';

import { PdfRenderer, sealPdfPassword } from '../../src/documents/document.js';
import type { RgbImage } from '../../src/documents/rgb-image.js';
import { OcrEngine, type PageResult } from '../../src/engine/ocr-engine.js';
import type { OcrJobOptions, PageJobData, PageOutcome, Stage } from '../../src/jobs/job-types.js';
import type { PageResultJson } from '../../src/jobs/result-json.js';
import { documentKeys, pageResultKey } from '../../src/jobs/storage-layout.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { Storage } from '../../src/storage/storage.js';
import { PagePipeline, type PageJob } from '../../src/worker/page-pipeline.js';
import { BLACK_RECT_PT, LETTER, LETTER_LANDSCAPE, makeCorruptPdf, makeEncryptedPdf, makePdf } from '../support/make-documents.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const STAGES: Stage[] = ['queued', 'fetch', 'render', 'preprocess', 'encode', 'prefill', 'decode', 'postprocess', 'store', 'total'];
/** Small pages (306×396 px) in tiny mode, 8 tokens: the whole pipeline in about a second. */
const V1_OPTIONS: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', dpi: 36, maxNewTokens: 8 };

let root: string;
let storage: Storage;
let renderer: PdfRenderer;
const logLines: Record<string, unknown>[] = [];

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-worker-pages-'));
  storage = openStorage(root);
  renderer = new PdfRenderer();
});
after(async () => {
  await renderer.close();
  await rm(root, { recursive: true, force: true });
});

describe('V1 page jobs', () => {
  let pipeline: PagePipeline;
  let threePages: PageOutcome[];

  before(async () => {
    const engine = await OcrEngine.load(await tinyCheckpoint('v1'), { threads: 2 });
    pipeline = new PagePipeline({ engine, storage, renderer, logger: capturingLogger(logLines), host: 'test-host', checkpointId: 'sha256:tiny-v1', synthetic: true });
    await storage.put(`staging/${idOf('doc3')}/source.pdf`, await makePdf([LETTER, LETTER, LETTER]));
    threePages = await Promise.all([1, 2, 3].map((page) => readAndCommit(pipeline, pageJob('doc3', page, page, V1_OPTIONS))));
  });

  test('a 3-page PDF gives one done outcome per page job, with the keys of its JSON and markdown', () => {
    assert.deepEqual(
      threePages.map((outcome) => outcome.status === 'done' && outcome.pages.map(({ page, key, markdownKey }) => ({ page, key, markdownKey }))),
      [1, 2, 3].map((page) => [{ page, key: `results/${idOf('doc3')}/pages/000${page}.json`, markdownKey: `results/${idOf('doc3')}/pages/000${page}.md` }]),
    );
  });

  test('every page JSON times every stage, none negative', async () => {
    for (const page of [1, 2, 3]) {
      const { timings_ms } = await pageJson('doc3', page);
      assert.deepEqual(Object.keys(timings_ms).sort(), [...STAGES].sort());
      for (const stage of STAGES) assert.ok(timings_ms[stage] >= 0, `page ${page} ${stage}: ${timings_ms[stage]}`);
      assert.ok(timings_ms.total > 0);
    }
  });

  test('a page JSON holds the markdown, blocks, tokens, model and worker; the .md file holds the same markdown', async () => {
    const json = await pageJson('doc3', 2);
    assert.equal(typeof json.markdown, 'string');
    assert.ok(Array.isArray(json.blocks));
    assert.ok(json.tokens.generated >= 1 && json.tokens.generated <= 8, `generated ${json.tokens.generated}`);
    assert.ok(json.tokens.image > 0 && json.tokens.prompt > json.tokens.image);
    assert.deepEqual(json.source, { uri: 's3://in/doc3.pdf', page: 2 });
    assert.deepEqual(json.model, { variant: 'v1', task: 'markdown', mode: 'tiny', checkpoint: 'sha256:tiny-v1', synthetic: true });
    assert.match(json.worker.backend, /^cpu-/);
    assert.deepEqual({ host: json.worker.host, attempt: json.worker.attempt }, { host: 'test-host', attempt: 1 });
    assert.equal((await storage.get(`results/${idOf('doc3')}/pages/0002.md`)).toString(), json.markdown);
  });

  test("a page JSON holds the page's confidence, each block's and each markdown paragraph's", async () => {
    const json = await pageJson('doc3', 2);
    const probabilities = (c: { mean: number; min: number } | undefined) => c !== undefined && c.min > 0 && c.min <= c.mean && c.mean <= 1;
    assert.ok(probabilities(json.confidence), JSON.stringify(json.confidence));
    for (const block of json.blocks) assert.ok(probabilities(block.confidence), JSON.stringify(block));
    assert.equal(json.paragraphs!.length > 0, json.markdown.length > 0);
    for (const paragraph of json.paragraphs!) {
      assert.ok(json.markdown.includes(paragraph.text), `${JSON.stringify(paragraph.text)} is not in the markdown`);
      assert.ok(probabilities(paragraph.confidence), JSON.stringify(paragraph));
    }
  });

  test("a try stores its pages under its own attempt keys; committing makes them the pages' results, and twice is harmless", async () => {
    await storage.put(`staging/${idOf('attempt')}/source.pdf`, await makePdf([LETTER]));
    const outcome = await pipeline.processPage(pageJob('attempt', 1, 1, V1_OPTIONS));
    assert.equal(outcome.status, 'done');
    if (outcome.status !== 'done') return;
    const [stored] = outcome.pages;
    assert.match(stored.attempt?.key ?? '', new RegExp(`^results/${idOf('attempt')}/attempts/0001-[0-9a-f-]{36}\\.json$`));
    assert.equal(stored.attempt?.markdownKey, stored.attempt?.key.replace(/\.json$/, '.md'));
    assert.equal(await storage.exists(stored.key), false, 'an uncommitted try is already the result');
    const attemptJson = await storage.get(stored.attempt!.key);
    const attemptMarkdown = await storage.get(stored.attempt!.markdownKey);
    await Promise.all([pipeline.commit(outcome), pipeline.commit(outcome)]);
    assert.deepEqual([await storage.get(stored.key), await storage.get(stored.markdownKey)], [attemptJson, attemptMarkdown]);
    assert.deepEqual([await storage.exists(stored.attempt!.key), await storage.exists(stored.attempt!.markdownKey)], [false, false]);
    await pipeline.commit(outcome);
    assert.deepEqual(await storage.get(stored.key), attemptJson);
  });

  test("a discarded try leaves no result and no attempt behind", async () => {
    await storage.put(`staging/${idOf('discarded')}/source.pdf`, await makePdf([LETTER]));
    const outcome = await pipeline.processPage(pageJob('discarded', 1, 1, V1_OPTIONS));
    assert.equal(outcome.status, 'done');
    if (outcome.status !== 'done') return;
    await pipeline.discard(outcome);
    const left = [];
    for await (const { key } of storage.list(`results/${idOf('discarded')}/`, { recursive: true })) if (!key.includes('/images/')) left.push(key);
    assert.deepEqual(left, []);
  });

  test('each stored page is logged with docId, page and jobId, without its text', async () => {
    const done = logLines.filter((line) => line.msg === 'page done' && line.docId === idOf('doc3'));
    const pages = done.map(({ page, jobId }) => ({ page, jobId })).sort((a, b) => Number(a.page) - Number(b.page));
    assert.deepEqual(pages, [1, 2, 3].map((page) => ({ page, jobId: `page doc3:${page}` })));
    const texts = (await Promise.all([1, 2, 3].map((page) => pageJson('doc3', page)))).map((json) => json.markdown).filter((text) => text.length > 0);
    assert.ok(texts.length > 0, 'no page has text to look for');
    for (const text of texts) assert.ok(!JSON.stringify(done).includes(JSON.stringify(text).slice(1, -1)), `a log line holds ${JSON.stringify(text)}`);
  });

  test('pages of two documents read at once are both read and stored', async () => {
    await storage.put(`staging/${idOf('docA')}/source.pdf`, await makePdf([LETTER]));
    await storage.put(`staging/${idOf('docB')}/source.pdf`, await makePdf([LETTER, LETTER]));
    const outcomes = await Promise.all([pageJob('docA', 1, 1, V1_OPTIONS), pageJob('docB', 2, 2, V1_OPTIONS)].map((job) => readAndCommit(pipeline, job)));
    assert.deepEqual(outcomes.map(({ status, docId, pages }) => ({ status, docId, pages: pages.map((p) => (typeof p === 'number' ? p : p.page)) })), [
      { status: 'done', docId: idOf('docA'), pages: [1] },
      { status: 'done', docId: idOf('docB'), pages: [2] },
    ]);
    assert.equal((await pageJson('docB', 2)).source.page, 2);
  });

  test("a corrupt PDF's page fails with the renderer's reason while another document's page read at once is stored", async () => {
    await storage.put(`staging/${idOf('bad')}/source.pdf`, makeCorruptPdf());
    await storage.put(`staging/${idOf('good')}/source.pdf`, await makePdf([LETTER]));
    const [bad, good] = await Promise.all([pageJob('bad', 1, 1, V1_OPTIONS), pageJob('good', 1, 1, V1_OPTIONS)].map((job) => readAndCommit(pipeline, job)));
    assert.equal(bad.status, 'failed');
    assert.ok(bad.status === 'failed' && bad.reason.length > 0 && !bad.retryable, JSON.stringify(bad));
    assert.equal(good.status, 'done');
    assert.equal(await storage.exists(`results/${idOf('bad')}/pages/0001.json`), false);
    assert.equal(await storage.exists(`results/${idOf('good')}/pages/0001.json`), true);
  });

  test('a job whose source is missing fails without retry, naming the key', async () => {
    const outcome = await readAndCommit(pipeline, pageJob('absent', 1, 1, V1_OPTIONS));
    assert.ok(outcome.status === 'failed' && !outcome.retryable && outcome.reason.includes(`staging/${idOf('absent')}/source.pdf`), JSON.stringify(outcome));
  });

  test('a job for another model variant fails as retryable, for a worker that runs that variant', async () => {
    const outcome = await readAndCommit(pipeline, pageJob('doc3', 1, 1, { ...V1_OPTIONS, variant: 'v2' }));
    assert.ok(outcome.status === 'failed' && outcome.retryable && /v2/.test(outcome.reason), JSON.stringify(outcome));
  });
});

describe('V3 page groups', () => {
  test('a parse-multi job over pages 1-3 stores three page results from one pass', async () => {
    const engine = await OcrEngine.load(await tinyCheckpoint('v3'), { threads: 2 });
    const pipeline = new PagePipeline({ engine, storage, renderer, logger: pino({ level: 'silent' }), host: 'test-host', checkpointId: 'sha256:tiny-v3', synthetic: true });
    await storage.put(`staging/${idOf('multi')}/source.pdf`, await makePdf([LETTER, LETTER, LETTER]));
    const options: OcrJobOptions = { variant: 'v3', task: 'parse-multi', mode: 'base', dpi: 36, maxNewTokens: 8 };

    const outcome = await readAndCommit(pipeline, pageJob('multi', 1, 3, options));

    assert.ok(outcome.status === 'done', JSON.stringify(outcome));
    assert.deepEqual(outcome.pages.map((page) => page.key), [1, 2, 3].map((page) => `results/${idOf('multi')}/pages/000${page}.json`));
    const pages = await Promise.all([1, 2, 3].map((page) => pageJson('multi', page)));
    assert.deepEqual(pages.map((json) => json.source.page), [1, 2, 3]);
    assert.ok(pages.every((json) => json.model.task === 'parse-multi' && json.tokens.generated <= 24));
    // The pass's tokens go to the pages whose segment holds them; every page carries a confidence.
    assert.ok(pages.every((json) => json.confidence !== undefined && json.confidence.mean >= 0 && json.confidence.mean <= 1));
    assert.ok(pages[0].confidence!.mean > 0, JSON.stringify(pages[0].confidence));
  });
});

describe('render options from the job', () => {
  const rendered: RgbImage[] = [];
  let pipeline: PagePipeline;
  before(() => {
    pipeline = new PagePipeline({ engine: engineRecording(rendered), storage, renderer, logger: pino({ level: 'silent' }), host: 'test-host', checkpointId: 'none', synthetic: true });
  });

  test('longestSide renders each PDF page with its longer side that many pixels long', async () => {
    await storage.put(`staging/${idOf('portrait-ls')}/source.pdf`, await makePdf([LETTER]));
    await storage.put(`staging/${idOf('landscape-ls')}/source.pdf`, await makePdf([LETTER_LANDSCAPE]));
    rendered.length = 0;
    const options: OcrJobOptions = { variant: 'v1', task: 'markdown', mode: 'tiny', longestSide: 500 };
    const outcomes = [await readAndCommit(pipeline, pageJob('portrait-ls', 1, 1, options)), await readAndCommit(pipeline, pageJob('landscape-ls', 1, 1, options))];
    assert.deepEqual(outcomes.map((outcome) => outcome.status), ['done', 'done']);
    // Letter is 612 × 792 points: 500 / 792 × 612 = 386.4.
    assert.deepEqual(rendered.map(({ width, height }) => [width, height]), [[386, 500], [500, 386]]);
  });

  test('an encrypted PDF renders with the password its job carries sealed', async () => {
    const locked = makeEncryptedPdf('s3cret');
    await storage.put(`staging/${idOf('locked')}/source.pdf`, locked);
    rendered.length = 0;
    const job = pageJob('locked', 1, 1, V1_OPTIONS);
    job.data.pdfPassword = sealPdfPassword('s3cret', locked);
    const outcome = await readAndCommit(pipeline, job);
    assert.equal(outcome.status, 'done', JSON.stringify(outcome));
    // At 36 dpi (half a pixel per point) the black rectangle's middle is dark: the content was decrypted.
    const [image] = rendered;
    const x = (BLACK_RECT_PT.left + BLACK_RECT_PT.width / 2) / 2;
    const y = (BLACK_RECT_PT.top + BLACK_RECT_PT.height / 2) / 2;
    const at = (y * image.width + x) * 3;
    assert.deepEqual([...image.data.subarray(at, at + 3)], [0, 0, 0]);
  });

  test('an encrypted PDF whose job carries no password fails without retry: a password is required', async () => {
    await storage.put(`staging/${idOf('locked-bare')}/source.pdf`, makeEncryptedPdf('s3cret'));
    const outcome = await readAndCommit(pipeline, pageJob('locked-bare', 1, 1, V1_OPTIONS));
    assert.deepEqual(outcome.status === 'failed' && { reason: outcome.reason, retryable: outcome.retryable }, {
      reason: 'encrypted PDF: a password is required (give it with --password-env NAME or --password P)',
      retryable: false,
    });
  });

  test('a password sealed to other bytes fails the job without retry', async () => {
    await storage.put(`staging/${idOf('locked-other')}/source.pdf`, makeEncryptedPdf('s3cret'));
    const job = pageJob('locked-other', 1, 1, V1_OPTIONS);
    job.data.pdfPassword = sealPdfPassword('s3cret', Buffer.from('%PDF-1.4 another document'));
    const outcome = await readAndCommit(pipeline, job);
    assert.ok(outcome.status === 'failed' && !outcome.retryable && /does not open with this source/.test(outcome.reason), JSON.stringify(outcome));
  });
});

/** An engine that reads pages instantly, keeping every image it is given. */
function engineRecording(images: RgbImage[]): OcrEngine {
  const engine = {
    variant: 'v1',
    model: { kernels: 'test', backend: 'cpu-test' },
    recognizePages: async (batch: readonly RgbImage[]): Promise<PageResult[]> => {
      images.push(...batch);
      return batch.map(instantPageResult);
    },
  };
  return engine as unknown as OcrEngine;
}

function instantPageResult(): PageResult {
  return {
    markdown: 'text',
    blocks: [],
    paragraphs: [{ text: 'text', span: { start: 0, end: 4 }, confidence: { mean: 0.9, min: 0.8 } }],
    span: { start: 0, end: 4 },
    confidence: { mean: 0.9, min: 0.8 },
    rawText: 'text',
    tokens: { prompt: 2, image: 1, generated: 1 },
    finish: 'eos',
    timings: { preprocess: 0, encode: 0, prefill: 0, decode: 0, postprocess: 0 },
  };
}

/** A docId for a test's document name. */
function idOf(name: string): string {
  return createHash('sha256').update(name).digest('hex').slice(0, 32);
}

function pageJob(name: string, firstPage: number, lastPage: number, options: OcrJobOptions): PageJob {
  const docId = idOf(name);
  const data: PageJobData = {
    docId,
    sourceUri: `s3://in/${name}.pdf`,
    storage: storage.url,
    type: 'pdf',
    firstPage,
    lastPage,
    keys: documentKeys(docId, 'pdf'),
    options,
    enqueuedAt: Date.now(),
  };
  return { data, attempt: 1, jobId: `page ${name}:${firstPage}` };
}

/** Reads a page job as its worker does, then commits its pages as the job's completion would. */
async function readAndCommit(pipeline: PagePipeline, job: PageJob): Promise<PageOutcome> {
  const outcome = await pipeline.processPage(job);
  if (outcome.status === 'done') await pipeline.commit(outcome);
  return outcome;
}

async function pageJson(name: string, page: number): Promise<PageResultJson> {
  return JSON.parse((await storage.get(pageResultKey(idOf(name), page, 'json'))).toString()) as PageResultJson;
}

function capturingLogger(lines: Record<string, unknown>[]) {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return pino({ level: 'info' }, sink);
}
