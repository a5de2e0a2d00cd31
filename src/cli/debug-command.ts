// `scriptorium debug dump`: tensors for comparing the engine with an outside implementation.
import { readFile } from 'node:fs/promises';

import { openDocument, renderPage, type RgbImage } from '../documents/document.js';
import { debugDump, writeDump } from '../model/debug-dump.js';
import { OCR_TASKS, VARIANTS, VISION_MODES } from '../vocabulary/ocr-vocabulary.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { DEVICE_OPTION } from './device-option.js';
import { QUANTIZE_CHOICES } from '../engine/native-binding.js';
import { PRECISION_CHOICES } from '../engine/precision.js';
import { choice, flag, integer, text, texts } from './options.js';
import { UsageError } from './usage.js';

const USAGE = `Usage: scriptorium debug dump --model DIR (--prompt TEXT | --image FILE [--image FILE ...])
                             [--task ocr|markdown|parse|parse-multi] [--mode tiny|small|base|large|gundam]
                             [--steps N] [--force-ids FILE.json] [--intermediates]
                             [--variant v1|v2|v3] [--threads T] [--device D] [--precision exact|fast]
                             [--quantize none|int8] --out FILE.safetensors

Writes input_ids, prefill_logits, generated_ids, step_topk_ids and step_topk_logits; with images also
vision_embeds, and with --intermediates the pixel tensors and each encoder's output per view
(docs/engine.md, "The debug dump"). Several --image flags need --task parse-multi (V3). --precision defaults to exact;
--quantize int8 dumps the engine with int8 experts and vocabulary head, as workers run it with that option.`;


async function readForceIds(file: string): Promise<number[]> {
  const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((id) => Number.isInteger(id) && id >= 0)) {
    throw new Error(`--force-ids ${file} must hold a non-empty JSON array of token ids`);
  }
  return parsed as number[];
}

/** The first page of each file (an image, or a PDF rendered at 144 DPI). */
async function readImages(files: readonly string[]): Promise<RgbImage[]> {
  const images: RgbImage[] = [];
  for (const file of files) {
    const bytes = await readFile(file);
    const { type } = await openDocument(bytes);
    images.push(await renderPage(bytes, type, 0));
  }
  return images;
}

const OPTIONS = {
  model: text().required(),
  prompt: text(),
  image: texts(),
  task: choice(OCR_TASKS),
  mode: choice(VISION_MODES),
  steps: integer({ min: 1 }).default(32),
  'force-ids': text(),
  intermediates: flag(),
  variant: choice(VARIANTS),
  threads: integer({ min: 1 }),
  device: DEVICE_OPTION,
  precision: choice(PRECISION_CHOICES).default('exact'),
  quantize: choice(QUANTIZE_CHOICES).default('none'),
  out: text().required(),
};

export const debugDumpCommand = defineCommand({ usage: USAGE, options: OPTIONS, run: runDebugDump });

async function runDebugDump({ options: values }: CommandLine<typeof OPTIONS>): Promise<number> {
  const { out, image: files } = values;
  if (files.length === 0 && values.prompt === undefined) throw new UsageError('give --prompt TEXT or --image FILE');
  if (files.length > 0 && values.prompt !== undefined) throw new UsageError('--prompt and --image exclude each other: images use --task');
  const dump = await debugDump({
    modelDir: values.model,
    prompt: values.prompt,
    images: files.length ? await readImages(files) : undefined,
    task: values.task,
    mode: values.mode,
    steps: values.steps,
    forceIds: values['force-ids'] === undefined ? undefined : await readForceIds(values['force-ids']),
    intermediates: values.intermediates,
    variant: values.variant,
    threads: values.threads,
    device: values.device,
    precision: values.precision,
    quantize: values.quantize,
  });
  await writeDump(out, dump);
  const shapes = Object.entries(dump.tensors)
    .map(([name, t]) => `${name} ${t.dtype}[${t.shape.join(',')}]`)
    .join(', ');
  process.stdout.write(`wrote ${out}: ${shapes}\n`);
  return 0;
}
