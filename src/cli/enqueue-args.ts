// The options that say how and where documents are queued, shared by `enqueue` and `watch`: the
// storage, the variant (named, or taken from a checkpoint), the OCR options, the PDF password,
// priority and attempts.
import { loadModelConfig, VARIANTS, type Variant } from '../engine/model-config.js';
import type { EnqueueOptions } from '../producer/enqueue.js';
import { resolveModelDir } from './default-model.js';
import { OCR_JOB_ARGS, OCR_JOB_ARGS_USAGE, ocrJobOptionsOf, pdfPasswordOf, PRIORITY_USAGE, priorityOf, type OcrJobArgValues } from './ocr-job-args.js';
import { openCommandStorage, STORAGE_URL_USAGE } from './storage-url.js';
import { choiceOption, integerOption, UsageError } from './usage.js';

export const ENQUEUE_ARGS = {
  to: { type: 'string' },
  model: { type: 'string' },
  variant: { type: 'string' },
  attempts: { type: 'string' },
  priority: { type: 'string' },
  ...OCR_JOB_ARGS,
} as const;

export const ENQUEUE_ARGS_USAGE = `  --to URL          storage for sources and results: ${STORAGE_URL_USAGE};
                    workers must use the same one
  --model DIR       the checkpoint workers will run, to take its variant (default $SCRIPTORIUM_MODEL,
                    else the synthetic tiny V3 checkpoint); --variant names it instead
${OCR_JOB_ARGS_USAGE}
${PRIORITY_USAGE}
  --attempts N      tries per page before it is recorded as failed (default 3)`;

interface EnqueueArgValues extends OcrJobArgValues {
  to?: string;
  model?: string;
  variant?: string;
  attempts?: string;
  priority?: string;
}

export type EnqueueSettings = Pick<EnqueueOptions, 'ocr' | 'storage' | 'pdfPassword' | 'priority' | 'attempts'>;

/** Checks the options (a UsageError names the wrong one) and opens the storage. */
export async function enqueueSettingsOf(values: EnqueueArgValues, usage: string): Promise<EnqueueSettings> {
  if (values.model !== undefined && values.variant !== undefined) throw new UsageError('give --model or --variant, not both', usage);
  const pdfPassword = pdfPasswordOf(values, usage);
  const variant = values.variant === undefined ? await variantOfModel(values.model) : choiceOption<Variant>(values.variant, 'variant', VARIANTS, usage);
  const ocr = ocrJobOptionsOf(values, variant, usage);
  const priority = priorityOf(values.priority, usage);
  const attempts = integerOption(values.attempts, 'attempts', 3, usage, 1);
  const storage = openCommandStorage(values.to);
  return { ocr, storage, pdfPassword, priority, attempts };
}

export async function variantOfModel(modelFlag: string | undefined): Promise<Variant> {
  const model = await resolveModelDir(modelFlag);
  return (await loadModelConfig(model.dir)).variant;
}
