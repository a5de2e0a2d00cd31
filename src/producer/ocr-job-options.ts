// The options a queued document is read with, from what its submitter chose: the CLI (enqueue, run,
// ocr, watch) and the HTTP API check the choices their own way and share these defaults.
import type { Variant } from '../vocabulary/ocr-vocabulary.js';
import type { OcrJobOptions } from '../jobs/job-types.js';

export const DEFAULT_DPI = 144;

/** A submitter's choices, already checked against the variant; dpi and longestSide exclude each other. */
export type OcrJobChoices = Partial<Omit<OcrJobOptions, 'variant'>>;

export function ocrJobOptions(variant: Variant, choices: OcrJobChoices): OcrJobOptions {
  // The task of one page as OcrEngine.defaultTask() gives it.
  const task = choices.task ?? (variant === 'v3' ? 'parse' : 'markdown');
  const mode = choices.mode ?? 'gundam';
  const options: OcrJobOptions =
    choices.longestSide === undefined ? { variant, task, mode, dpi: choices.dpi ?? DEFAULT_DPI } : { variant, task, mode, longestSide: choices.longestSide };
  if (choices.maxNewTokens !== undefined) options.maxNewTokens = choices.maxNewTokens;
  return options;
}
