// A submission's options (multipart form fields or JSON members) checked and turned into what the
// producer's enqueue takes: the OcrJobOptions every job carries, the priority and the PDF password.
// The defaults are the producer's (ocr-job-options.ts); the variant defaults to the server's.
import { modesOf, tasksOf, VARIANTS, type Variant } from '../vocabulary/ocr-vocabulary.js';
import type { OcrJobOptions } from '../jobs/job-types.js';
import { ocrJobOptions } from '../producer/ocr-job-options.js';
import { DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY } from '../queue/job-options.js';
import { HttpError } from './http-error.js';

/** Members a submission may have besides the document itself and its callback URL. */
export const SUBMIT_OPTION_NAMES = ['variant', 'task', 'mode', 'dpi', 'longestSide', 'maxTokens', 'priority', 'password'] as const;

export interface CheckedSubmitOptions {
  ocr: OcrJobOptions;
  priority: number;
  pdfPassword?: string;
}

/** `fields` holds strings (form fields) or JSON values; unknown names are refused. */
export function checkSubmitOptions(fields: Record<string, unknown>, defaultVariant: Variant): CheckedSubmitOptions {
  for (const name of Object.keys(fields)) {
    if (!(SUBMIT_OPTION_NAMES as readonly string[]).includes(name)) {
      throw new HttpError(400, `unknown option "${name}": the options are ${SUBMIT_OPTION_NAMES.join(', ')} and callbackUrl`);
    }
  }
  const variant = choice(fields.variant, 'variant', VARIANTS) ?? defaultVariant;
  const dpi = integer(fields.dpi, 'dpi', 1);
  const longestSide = integer(fields.longestSide, 'longestSide', 1);
  if (dpi !== undefined && longestSide !== undefined) throw new HttpError(400, 'give dpi or longestSide, not both');
  const ocr = ocrJobOptions(variant, {
    task: choice(fields.task, 'task', tasksOf(variant)),
    mode: choice(fields.mode, 'mode', modesOf(variant)),
    dpi,
    longestSide,
    maxNewTokens: integer(fields.maxTokens, 'maxTokens', 1),
  });
  const priority = integer(fields.priority, 'priority', MIN_PRIORITY) ?? DEFAULT_PRIORITY;
  if (priority > MAX_PRIORITY) throw new HttpError(400, `priority must be at most ${MAX_PRIORITY} (got ${priority})`);
  const password = text(fields.password, 'password');
  if (password === '') throw new HttpError(400, 'password must not be empty');
  return password === undefined ? { ocr, priority } : { ocr, priority, pdfPassword: password };
}

function text(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new HttpError(400, `${name} must be a string`);
  return value;
}

function choice<C extends string>(value: unknown, name: string, choices: readonly C[]): C | undefined {
  const given = text(value, name);
  if (given === undefined) return undefined;
  if (!choices.includes(given as C)) throw new HttpError(400, `${name} must be one of ${choices.join(', ')} (got "${given}")`);
  return given as C;
}

function integer(value: unknown, name: string, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min) throw new HttpError(400, `${name} must be an integer >= ${min} (got ${JSON.stringify(value)})`);
  return n;
}
