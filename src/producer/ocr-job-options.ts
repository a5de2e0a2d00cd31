// The options a queued document is read with, from what its submitter chose: the CLI (enqueue, run,
// ocr, watch) and the HTTP API check the choices their own way and share these defaults.
import { modesOf, tasksOf, type Variant } from '../vocabulary/ocr-vocabulary.js';
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

/**
 * `options` with the choices given changed (a document read again: `retry --flagged`): a dpi or a
 * longest side replaces both; a task or mode the variant lacks is a RangeError naming the ones it has.
 */
export function changedOcrJobOptions(options: OcrJobOptions, choices: OcrJobChoices): OcrJobOptions {
  const { variant } = options;
  if (choices.task !== undefined && !tasksOf(variant).includes(choices.task)) {
    throw new RangeError(`${variant} has no task ${choices.task}; it has ${tasksOf(variant).join(', ')}`);
  }
  if (choices.mode !== undefined && !modesOf(variant).includes(choices.mode)) {
    throw new RangeError(`${variant} has no mode ${choices.mode}; it has ${modesOf(variant).join(', ')}`);
  }
  const changed: OcrJobOptions = { variant, task: choices.task ?? options.task, mode: choices.mode ?? options.mode };
  const resized = choices.dpi !== undefined || choices.longestSide !== undefined;
  const dpi = resized ? choices.dpi : options.dpi;
  const longestSide = resized ? choices.longestSide : options.longestSide;
  const maxNewTokens = choices.maxNewTokens ?? options.maxNewTokens;
  if (dpi !== undefined) changed.dpi = dpi;
  if (longestSide !== undefined) changed.longestSide = longestSide;
  if (maxNewTokens !== undefined) changed.maxNewTokens = maxNewTokens;
  return changed;
}
