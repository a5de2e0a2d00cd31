// The command-line options that choose how documents are read, shared by `enqueue` and `run`:
// checked against the model variant and turned into the OcrJobOptions every job carries.
import { VISION_MODES, type VisionMode } from '../engine/image-tokens.js';
import type { Variant } from '../engine/model-config.js';
import { tasksOf, type OcrTask } from '../engine/prompts.js';
import type { OcrJobOptions } from '../jobs/job-types.js';
import { DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY } from '../queue/job-options.js';
import { choiceOption, integerOption, UsageError } from './usage.js';

export const OCR_JOB_ARGS = {
  task: { type: 'string' },
  mode: { type: 'string' },
  dpi: { type: 'string' },
  'longest-side': { type: 'string' },
  'max-tokens': { type: 'string' },
  password: { type: 'string' },
  'password-env': { type: 'string' },
} as const;

export const OCR_JOB_ARGS_USAGE = `  --task T          ocr|markdown (V1/V2, default markdown), parse|parse-multi (V3, default parse;
                    parse-multi reads a document's pages in single passes of up to 32K tokens)
  --mode M          tiny|small|base|large|gundam (default gundam; V2 has gundam only)
  --dpi N           PDF rendering resolution (default 144)
  --longest-side PX render PDF pages with their longer side PX pixels long, instead of --dpi
  --max-tokens N    cap on generated tokens per page (default: the model's own limits)
  --password P      password for encrypted PDFs (other users of this machine can see it in \`ps\`:
                    prefer --password-env); jobs carry it sealed to the document, never in clear
  --password-env NAME
                    the same, read from environment variable NAME`;

export const PRIORITY_USAGE = `  --priority N      ${MIN_PRIORITY} (served first) … ${MAX_PRIORITY} (last), default ${DEFAULT_PRIORITY}`;

const DEFAULT_DPI = 144;

export interface OcrJobArgValues {
  task?: string;
  mode?: string;
  dpi?: string;
  'longest-side'?: string;
  'max-tokens'?: string;
  password?: string;
  'password-env'?: string;
}

export function ocrJobOptionsOf(values: OcrJobArgValues, variant: Variant, usage: string): OcrJobOptions {
  // The same defaults as OcrEngine.defaultTask() and `scriptorium ocr`.
  const task = values.task === undefined ? (variant === 'v3' ? 'parse' : 'markdown') : choiceOption<OcrTask>(values.task, 'task', tasksOf(variant), usage);
  const mode = values.mode === undefined ? 'gundam' : choiceOption<VisionMode>(values.mode, 'mode', VISION_MODES[variant], usage);
  if (values.dpi !== undefined && values['longest-side'] !== undefined) throw new UsageError('give --dpi or --longest-side, not both', usage);
  const options: OcrJobOptions =
    values['longest-side'] === undefined
      ? { variant, task, mode, dpi: integerOption(values.dpi, 'dpi', DEFAULT_DPI, usage, 1) }
      : { variant, task, mode, longestSide: integerOption(values['longest-side'], 'longest-side', 0, usage, 1) };
  if (values['max-tokens'] !== undefined) options.maxNewTokens = integerOption(values['max-tokens'], 'max-tokens', 0, usage, 1);
  return options;
}

/** The password for encrypted PDFs from --password or --password-env, if either is given. */
export function pdfPasswordOf(values: OcrJobArgValues, usage: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const { password, 'password-env': name } = values;
  if (password !== undefined && name !== undefined) throw new UsageError('give --password or --password-env, not both', usage);
  if (password !== undefined) {
    if (password === '') throw new UsageError('--password must not be empty', usage);
    return password;
  }
  if (name === undefined) return undefined;
  const fromEnv = env[name];
  if (fromEnv === undefined || fromEnv === '') throw new UsageError(`--password-env ${name}: that environment variable is not set or empty`, usage);
  return fromEnv;
}

export function priorityOf(value: string | undefined, usage: string): number {
  const priority = integerOption(value, 'priority', DEFAULT_PRIORITY, usage, MIN_PRIORITY);
  if (priority > MAX_PRIORITY) throw new UsageError(`--priority must be at most ${MAX_PRIORITY} (got ${priority})`, usage);
  return priority;
}
