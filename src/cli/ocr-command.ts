// `scriptorium ocr`: single-process OCR of an image or PDF straight through the engine, no queue.
import { readFile } from 'node:fs/promises';

import { openDocument, renderPage, type RgbImage } from '../documents/document.js';
import { VISION_MODES, type VisionMode } from '../engine/image-tokens.js';
import { OcrEngine, type PageResult, type StageTimings } from '../engine/ocr-engine.js';
import { promptText, type OcrTask } from '../engine/prompts.js';
import { planPageGroups } from '../engine/v3-page-groups.js';
import { resolveModelDir } from './default-model.js';
import { deviceOption } from './device-option.js';
import { parsePageRanges } from './page-ranges.js';
import { choiceOption, integerOption, parseCommandArgs, UsageError } from './usage.js';

const USAGE = `Usage: scriptorium ocr FILE [--model DIR] [--mode tiny|small|base|large|gundam] [--task ocr|markdown|parse|parse-multi]
                      [--pages 1-5] [--format md|json] [--profile] [--max-tokens N] [--batch N]
                      [--dpi N] [--password P] [--threads T] [--device cpu|gpu|gpu:N|auto]

FILE is a PDF (pages rendered with PDFium) or an image (PNG, JPEG, WebP, GIF, BMP, multi-page TIFF).
Default task: markdown (V1/V2), parse (V3); parse-multi reads many pages in one V3 pass.
Pages are decoded --batch at a time (default 4). --profile prints per-stage timings to stderr.
--device gpu runs the decoder on a Vulkan GPU (scriptorium devices lists them).`;

const PAGE_SPLIT = '\n\n<--- Page Split --->\n\n';
const MULTI_PAGE_OUTPUT_BUDGET = 2048;

type Stage = keyof StageTimings | 'render';
const STAGES: Stage[] = ['render', 'preprocess', 'encode', 'prefill', 'decode', 'postprocess'];

interface PageRecord extends PageResult {
  page: number;
  renderMs: number;
  /** Pages of one group were decoded together. */
  group: number;
}

export async function runOcrCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    args,
    {
      model: { type: 'string' },
      mode: { type: 'string' },
      task: { type: 'string' },
      pages: { type: 'string' },
      format: { type: 'string', default: 'md' },
      profile: { type: 'boolean', default: false },
      'max-tokens': { type: 'string' },
      batch: { type: 'string' },
      dpi: { type: 'string' },
      password: { type: 'string' },
      threads: { type: 'string' },
      device: { type: 'string' },
    },
    USAGE,
  );
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError('give exactly one FILE', USAGE);
  const format = choiceOption(values.format, 'format', ['md', 'json'] as const, USAGE);
  const batch = integerOption(values.batch, 'batch', 4, USAGE, 1);
  const dpi = integerOption(values.dpi, 'dpi', 144, USAGE, 1);
  const maxNewTokens = values['max-tokens'] === undefined ? undefined : integerOption(values['max-tokens'], 'max-tokens', 0, USAGE, 1);
  const threads = values.threads === undefined ? undefined : integerOption(values.threads, 'threads', 1, USAGE, 1);

  const bytes = await readFile(positionals[0]);
  const document = await openDocument(bytes, { password: values.password });
  const pages = parsePageRanges(values.pages, document.pageCount, USAGE);
  const model = await resolveModelDir(values.model);
  const engine = await OcrEngine.load(model.dir, { threads, device: deviceOption(values.device, USAGE) });
  const task = values.task === undefined ? engine.defaultTask() : (values.task as OcrTask);
  promptText(engine.variant, task); // rejects a task the variant was not released with
  const mode = values.mode === undefined ? 'gundam' : choiceOption<VisionMode>(values.mode, 'mode', VISION_MODES[engine.variant], USAGE);

  const records: PageRecord[] = [];
  const groups =
    task === 'parse-multi'
      ? planPageGroups(pages.length, {
          outputBudgetPerPage: maxNewTokens ?? MULTI_PAGE_OUTPUT_BUDGET,
          promptTokens: engine.tokenizer.encode(promptText('v3', 'parse-multi').replace('<image>', '')).length,
        })
      : Array.from({ length: Math.ceil(pages.length / batch) }, (_, g) => ({ start: g * batch, end: Math.min((g + 1) * batch, pages.length) }));
  for (const [groupIndex, group] of groups.entries()) {
    const selected = pages.slice(group.start, group.end);
    const images: RgbImage[] = [];
    const renderMs: number[] = [];
    for (const page of selected) {
      const started = performance.now();
      images.push(await renderPage(bytes, document.type, page, { password: values.password, dpi }));
      renderMs.push(performance.now() - started);
    }
    const results =
      task === 'parse-multi'
        ? await engine.recognizeSinglePass(images, { maxNewTokens: maxNewTokens && maxNewTokens * images.length })
        : await engine.recognizePages(images, { task, mode, maxNewTokens });
    results.forEach((result, i) => records.push({ ...result, page: selected[i] + 1, renderMs: renderMs[i], group: groupIndex }));
  }

  if (format === 'json') {
    const pagesOut = records.map(({ page, markdown, blocks, rawText, tokens, finish, timings, renderMs }) => ({
      page,
      markdown,
      blocks,
      rawText,
      tokens,
      finish,
      timings_ms: { render: renderMs, ...timings },
    }));
    process.stdout.write(`${JSON.stringify({ model: { variant: engine.variant, synthetic: model.synthetic, task, mode }, pages: pagesOut }, null, 2)}\n`);
  } else {
    process.stdout.write(`${records.map((r) => r.markdown).join(PAGE_SPLIT)}\n`);
  }
  if (values.profile) process.stderr.write(profileTable(records, engine));
  return 0;
}

function profileTable(records: PageRecord[], engine: OcrEngine): string {
  const header = ['page', ...STAGES, 'image', 'prompt', 'generated'];
  const rows = records.map((r) => [
    String(r.page),
    ...STAGES.map((stage) => (stage === 'render' ? r.renderMs : r.timings[stage]).toFixed(0)),
    String(r.tokens.image),
    String(r.tokens.prompt),
    String(r.tokens.generated),
  ]);
  // Pages of a group share one prefill and their decode steps: a group counts its slowest page once.
  const sharedStages = new Set<Stage>(['prefill', 'decode']);
  const total = (stage: Stage) => {
    if (stage === 'render') return records.reduce((sum, r) => sum + r.renderMs, 0);
    if (!sharedStages.has(stage)) return records.reduce((sum, r) => sum + r.timings[stage], 0);
    const perGroup = new Map<number, number>();
    for (const r of records) perGroup.set(r.group, Math.max(perGroup.get(r.group) ?? 0, r.timings[stage]));
    return [...perGroup.values()].reduce((a, b) => a + b, 0);
  };
  rows.push(['total', ...STAGES.map((stage) => total(stage).toFixed(0)), '', '', String(records.reduce((s, r) => s + r.tokens.generated, 0))]);
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((row) => row[c].length)));
  const line = (cells: string[]) => cells.map((cell, c) => cell.padStart(widths[c])).join('  ');
  const decodeMs = total('decode');
  const generated = records.reduce((s, r) => s + r.tokens.generated, 0);
  return [
    `profile (ms; prefill and decode shared by pages decoded together): ${engine.variant}, ${engine.model.backend} × ${engine.model.threads} threads`,
    line(header),
    ...rows.map(line),
    `decode ${decodeMs > 0 ? ((generated / decodeMs) * 1000).toFixed(1) : '0'} tokens/s`,
    '',
  ].join('\n');
}
