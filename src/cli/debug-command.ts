// `scriptorium debug dump`: tensors for comparing the engine with an outside implementation.
import { readFile } from 'node:fs/promises';

import { openDocument, renderPage, type RgbImage } from '../documents/document.js';
import { debugDump, writeDump } from '../model/debug-dump.js';
import type { VisionMode } from '../engine/image-tokens.js';
import { VARIANTS, type Variant } from '../engine/model-config.js';
import type { OcrTask } from '../engine/prompts.js';
import { deviceOption } from './device-option.js';
import { precisionOption } from './precision-option.js';
import { choiceOption, integerOption, parseCommandArgs, requireOption, UsageError } from './usage.js';

const USAGE = `Usage: scriptorium debug dump --model DIR (--prompt TEXT | --image FILE [--image FILE ...])
                             [--task ocr|markdown|parse|parse-multi] [--mode tiny|small|base|large|gundam]
                             [--steps N] [--force-ids FILE.json] [--intermediates]
                             [--variant v1|v2|v3] [--threads T] [--device D] [--precision exact|fast]
                             --out FILE.safetensors

Writes input_ids, prefill_logits, generated_ids, step_topk_ids and step_topk_logits; with images also
vision_embeds, and with --intermediates the pixel tensors and each encoder's output per view
(README, "Debugging"). Several --image flags need --task parse-multi (V3). --precision defaults to exact.`;

const TASKS: readonly OcrTask[] = ['ocr', 'markdown', 'parse', 'parse-multi'];
const MODES: readonly VisionMode[] = ['tiny', 'small', 'base', 'large', 'gundam'];

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

export async function runDebugCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'dump') throw new UsageError(sub ? `unknown debug command "${sub}"` : 'missing debug command', USAGE);
  const { values } = parseCommandArgs(
    rest,
    {
      model: { type: 'string' },
      prompt: { type: 'string' },
      image: { type: 'string', multiple: true },
      task: { type: 'string' },
      mode: { type: 'string' },
      steps: { type: 'string' },
      'force-ids': { type: 'string' },
      intermediates: { type: 'boolean', default: false },
      variant: { type: 'string' },
      threads: { type: 'string' },
      device: { type: 'string' },
      precision: { type: 'string' },
      out: { type: 'string' },
    },
    USAGE,
  );
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const out = requireOption(values.out, 'out', USAGE);
  const files = values.image ?? [];
  if (files.length === 0 && values.prompt === undefined) throw new UsageError('give --prompt TEXT or --image FILE', USAGE);
  if (files.length > 0 && values.prompt !== undefined) throw new UsageError('--prompt and --image exclude each other: images use --task', USAGE);
  const dump = await debugDump({
    modelDir: requireOption(values.model, 'model', USAGE),
    prompt: values.prompt,
    images: files.length ? await readImages(files) : undefined,
    task: values.task === undefined ? undefined : choiceOption(values.task, 'task', TASKS, USAGE),
    mode: values.mode === undefined ? undefined : choiceOption(values.mode, 'mode', MODES, USAGE),
    steps: integerOption(values.steps, 'steps', 32, USAGE, 1),
    forceIds: values['force-ids'] ? await readForceIds(values['force-ids']) : undefined,
    intermediates: values.intermediates,
    variant: values.variant === undefined ? undefined : choiceOption<Variant>(values.variant, 'variant', VARIANTS, USAGE),
    threads: values.threads === undefined ? undefined : integerOption(values.threads, 'threads', 1, USAGE, 1),
    device: deviceOption(values.device, USAGE),
    precision: precisionOption(values.precision, 'exact', USAGE),
  });
  await writeDump(out, dump);
  const shapes = Object.entries(dump.tensors)
    .map(([name, t]) => `${name} ${t.dtype}[${t.shape.join(',')}]`)
    .join(', ');
  process.stdout.write(`wrote ${out}: ${shapes}\n`);
  return 0;
}
