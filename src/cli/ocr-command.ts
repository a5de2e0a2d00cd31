// `scriptorium ocr`: one document read on this machine by the same page pipeline the workers run,
// minus the queue (src/worker/ocr-document.ts); the same options and defaults as enqueue and run. Prints the
// markdown, or the page-result JSONs, and with --profile the stage times.
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';

import { pino } from 'pino';

import { VARIANTS } from '../vocabulary/ocr-vocabulary.js';
import { loadModelConfig } from '../engine/model-config.js';
import { pagesInHand } from '../engine/batch-size.js';
import { OcrEngine } from '../engine/ocr-engine.js';
import type { Stage } from '../jobs/job-types.js';
import type { PageResultJson } from '../jobs/result-json.js';
import { PAGE_SPLIT } from '../worker/document-assembler.js';
import { checkpointIdentity } from '../model/checkpoint-identity.js';
import { resolveModelDir } from '../model/model-resolve.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { BATCH_OPTION, BATCH_USAGE, ENGINE_OPTIONS, ENGINE_OPTIONS_USAGE, engineChoices } from './engine-options.js';
import { EXIT_ALL_DONE, EXIT_SOME_FAILED } from './document-report.js';
import { OCR_JOB_ARGS_USAGE, OCR_JOB_OPTIONS, ocrJobOptionsOf, pdfPasswordOf } from './ocr-job-args.js';
import { ocrDocument, type OcrDocument } from '../worker/ocr-document.js';
import { choice, flag, integer, text } from './options.js';
import { PAGES_OPTION, selectedPages } from './page-ranges.js';
import { UsageError } from './usage.js';

const USAGE = `Usage: scriptorium ocr FILE [--model DIR] [--variant v1|v2|v3] [--task T] [--mode M]
                      [--dpi N | --longest-side PX] [--max-tokens N] [--password-env NAME | --password P]
                      [--pages 1-5] [--format md|json] [--profile] [--batch N|auto] [--threads T] [--device D]
                      [--precision exact|fast] [--quantize none|int8]

Reads one PDF (pages rendered with PDFium) or image (PNG, JPEG, WebP, GIF, BMP, multi-page TIFF) with
the workers' page pipeline, without a queue, and prints its markdown (pages joined by the page split
marker) or, with --format json, the page-result JSON of every page as workers store it. --device gpu runs the
decoder on a Vulkan GPU (scriptorium devices lists them).

  --model DIR       checkpoint (default $SCRIPTORIUM_MODEL, else the synthetic tiny V3 checkpoint)
  --variant V       overrides the variant detected from config.json
${OCR_JOB_ARGS_USAGE}
  --pages SPEC      pages to read, e.g. 1-3,7 (default: all; with parse-multi a page group holding
                    a chosen page is read whole)
  --format F        md (default) or json
  --profile         per-page stage times and token counts on stderr
${BATCH_USAGE}
  --threads T       engine threads (default: one per CPU)
${ENGINE_OPTIONS_USAGE}

Exit status: 0 when every page was read; 3 when the file is no usable document or a page failed
(each reason on stderr).`;

const PROFILE_STAGES: Stage[] = ['render', 'preprocess', 'encode', 'prefill', 'decode', 'postprocess'];

const OPTIONS = {
  model: text(),
  variant: choice(VARIANTS),
  pages: PAGES_OPTION,
  format: choice(['md', 'json'] as const).default('md'),
  profile: flag(),
  batch: BATCH_OPTION,
  threads: integer({ min: 1 }),
  ...OCR_JOB_OPTIONS,
  ...ENGINE_OPTIONS,
};

export const ocrCommand = defineCommand({ usage: USAGE, options: OPTIONS, positionals: { name: 'FILE', min: 1, max: 1 }, run: runOcr });

async function runOcr({ options: values, positionals }: CommandLine<typeof OPTIONS>): Promise<number> {
  const { format, batch, threads } = values;
  const pdfPassword = pdfPasswordOf(values);
  const bytes = await readOcrInput(positionals[0]);
  const model = await resolveModelDir(values.model);
  const { variant } = await loadModelConfig(model.dir, values.variant);
  const ocr = ocrJobOptionsOf(values, variant);

  const [engine, checkpointId] = await Promise.all([
    OcrEngine.load(model.dir, { variant, threads, ...engineChoices(values), maxSequences: batch }),
    checkpointIdentity(model.dir),
  ]);
  const read = await ocrDocument({
    uri: path.resolve(positionals[0]),
    bytes,
    ocr,
    pdfPassword,
    pages: (pageCount) => selectedPages(values.pages, pageCount),
    engine,
    checkpointId,
    synthetic: model.synthetic,
    concurrency: pagesInHand(engine.batch.size),
    logger: pino({ level: 'silent' }),
  });
  if ('rejected' in read) {
    process.stderr.write(`scriptorium: rejected ${positionals[0]}: ${read.rejected}\n`);
    return EXIT_SOME_FAILED;
  }
  const document = read;

  if (format === 'json') {
    const { documentJob } = document.planned;
    const output = { source: { uri: documentJob.sourceUri, type: documentJob.type, pages: documentJob.pageCount }, pages: document.pages, failedPages: document.failedPages };
    process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
  } else {
    process.stdout.write(`${document.pages.map((page) => page.markdown).join(PAGE_SPLIT)}\n`);
  }
  for (const { page, reason } of document.failedPages) process.stderr.write(`scriptorium: page ${page} failed: ${reason}\n`);
  if (values.profile) process.stderr.write(profileTable(document, engine));
  return document.failedPages.length === 0 ? EXIT_ALL_DONE : EXIT_SOME_FAILED;
}

/** The file's bytes, or an error that says what is wrong with the argument and what to do instead. */
async function readOcrInput(file: string): Promise<Buffer> {
  if (/^s3:\/\//i.test(file)) {
    throw new UsageError(`${file}: ocr reads a local file; read S3 objects with \`scriptorium run ${file} --out DIR\` (or copy the object here first)`);
  }
  try {
    if ((await stat(file)).isDirectory()) {
      throw new UsageError(`${file} is a directory: ocr reads one document; read folders with \`scriptorium run ${file} --out DIR\``);
    }
    return await readFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new Error(`${file}: no such file`);
    if (code === 'EACCES') throw new Error(`${file}: permission denied`);
    throw error;
  }
}

function profileTable({ pages }: OcrDocument, engine: OcrEngine): string {
  const header = ['page', ...PROFILE_STAGES, 'image', 'prompt', 'generated'];
  const rows = pages.map((json: PageResultJson) => [
    String(json.source.page),
    ...PROFILE_STAGES.map((stage) => json.timings_ms[stage].toFixed(0)),
    String(json.tokens.image),
    String(json.tokens.prompt),
    String(json.tokens.generated),
  ]);
  const generated = pages.reduce((sum, json) => sum + json.tokens.generated, 0);
  rows.push(['total', ...PROFILE_STAGES.map((stage) => pages.reduce((sum, json) => sum + json.timings_ms[stage], 0).toFixed(0)), '', '', String(generated)]);
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((row) => row[c].length)));
  const line = (cells: string[]) => cells.map((cell, c) => cell.padStart(widths[c])).join('  ');
  return [
    `profile (ms; prefill and decode shared by pages decoded together): ${engine.variant}, ${engine.model.backend} × ${engine.model.threads} threads`,
    line(header),
    ...rows.map(line),
    '',
  ].join('\n');
}
