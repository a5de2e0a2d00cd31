// The command-line options that choose how documents are read, shared by `enqueue` and `run`:
// checked against the model variant and turned into the OcrJobOptions every job carries.
import { modesOf, OCR_TASKS, tasksOf, VISION_MODES, type OcrTask, type Variant, type VisionMode } from '../vocabulary/ocr-vocabulary.js';
import type { OcrJobOptions } from '../jobs/job-types.js';
import { ocrJobOptions, type OcrJobChoices } from '../producer/ocr-job-options.js';
import { DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY } from '../queue/job-options.js';
import type { OptionValues } from './command-line.js';
import { checkedChoice, integer, notBoth, text } from './options.js';
import { UsageError } from './usage.js';

/** The password of encrypted PDFs (pdfPasswordOf). */
export const PASSWORD_OPTIONS = { password: text(), 'password-env': text() };

/** Task and mode are checked against the variant, known only once the model is (ocrJobOptionsOf). */
export const OCR_JOB_OPTIONS = {
  task: text(),
  mode: text(),
  dpi: integer({ min: 1 }),
  'longest-side': integer({ min: 1 }),
  'max-tokens': integer({ min: 1 }),
  ...PASSWORD_OPTIONS,
};

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

export type OcrJobOptionValues = Partial<OptionValues<typeof OCR_JOB_OPTIONS>>;

export const PRIORITY_OPTION = integer({ min: MIN_PRIORITY, max: MAX_PRIORITY }).default(DEFAULT_PRIORITY);

export function ocrJobOptionsOf(values: OcrJobOptionValues, variant: Variant): OcrJobOptions {
  notBoth(values, 'dpi', 'longest-side');
  return ocrJobOptions(variant, {
    task: values.task === undefined ? undefined : checkedChoice<OcrTask>(values.task, '--task', tasksOf(variant)),
    mode: values.mode === undefined ? undefined : checkedChoice<VisionMode>(values.mode, '--mode', modesOf(variant)),
    dpi: values.dpi,
    longestSide: values['longest-side'],
    maxNewTokens: values['max-tokens'],
  });
}

/**
 * Only the choices given, for documents of any variant (`retry --flagged`): a task or mode must be
 * one some variant has; whether the document's variant has it is checked per document.
 */
export function ocrJobChoicesOf(values: OcrJobOptionValues): OcrJobChoices {
  notBoth(values, 'dpi', 'longest-side');
  const choices: OcrJobChoices = {};
  if (values.task !== undefined) choices.task = checkedChoice<OcrTask>(values.task, '--task', OCR_TASKS);
  if (values.mode !== undefined) choices.mode = checkedChoice<VisionMode>(values.mode, '--mode', VISION_MODES);
  if (values.dpi !== undefined) choices.dpi = values.dpi;
  if (values['longest-side'] !== undefined) choices.longestSide = values['longest-side'];
  if (values['max-tokens'] !== undefined) choices.maxNewTokens = values['max-tokens'];
  return choices;
}

/** The password for encrypted PDFs from --password or --password-env, if either is given. */
export function pdfPasswordOf(values: OcrJobOptionValues, env: NodeJS.ProcessEnv = process.env): string | undefined {
  notBoth(values, 'password', 'password-env');
  const { password, 'password-env': name } = values;
  if (password !== undefined || name === undefined) return password;
  const fromEnv = env[name];
  if (fromEnv === undefined || fromEnv === '') throw new UsageError(`--password-env ${name}: that environment variable is not set or empty`);
  return fromEnv;
}
