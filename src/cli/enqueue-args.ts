// The options that say how and where documents are queued, shared by `enqueue` and `watch`: the
// storage, the variant (named, or taken from a checkpoint), the OCR options, the PDF password,
// priority and attempts, and the limits a document must keep to (also `run` and `serve`).
import { VARIANTS, type Variant } from '../vocabulary/ocr-vocabulary.js';
import { loadModelConfig } from '../engine/model-config.js';
import type { EnqueueOptions } from '../producer/enqueue.js';
import type { DocumentLimits } from '../producer/plan-document.js';
import type { OptionValues } from './command-line.js';
import { resolveModelDir } from '../model/model-resolve.js';
import { OCR_JOB_ARGS_USAGE, OCR_JOB_OPTIONS, ocrJobOptionsOf, pdfPasswordOf, PRIORITY_OPTION, PRIORITY_USAGE } from './ocr-job-args.js';
import { choice, integer, notBoth, text } from './options.js';
import { openCommandStorage, STORAGE_URL_USAGE } from './storage-url.js';
import { DEFAULT_PAGE_ATTEMPTS } from '../queue/job-options.js';

/** Tries per page before it is recorded as failed: enqueue, watch, serve and retry. */
export const ATTEMPTS_OPTION = integer({ min: 1 }).default(DEFAULT_PAGE_ATTEMPTS);

/** Where jobs are queued and for which variant (variantOf), and their tries: enqueue, watch and serve. */
export const QUEUE_TARGET_OPTIONS = {
  to: text(),
  model: text(),
  variant: choice(VARIANTS),
  attempts: ATTEMPTS_OPTION,
};

/** Page jobs each variant's page queue may hold: beyond it `enqueue` waits and `serve` answers 429. */
export const MAX_QUEUED_PAGES_OPTION = integer({ min: 1 }).orEnv('SCRIPTORIUM_MAX_QUEUED_PAGES');

export const MAX_QUEUED_PAGES_USAGE = `  --max-queued-pages N
                    page jobs each variant's page queue may hold, those being read included (default
                    $SCRIPTORIUM_MAX_QUEUED_PAGES, else no limit); new work is also held back while Redis
                    has used 90% of its maxmemory`;

const MIB = 1024 * 1024;

/** The per-document limits: enqueue, watch and run (serve has its own --max-document-mb default). */
export const DOCUMENT_LIMIT_OPTIONS = {
  'max-document-pages': integer({ min: 1 }).orEnv('SCRIPTORIUM_MAX_DOCUMENT_PAGES'),
  'max-document-mb': integer({ min: 1 }).orEnv('SCRIPTORIUM_MAX_DOCUMENT_MB'),
};

export const DOCUMENT_LIMITS_USAGE = `  --max-document-pages N
                    refuse documents of more pages, with the reason (default
                    $SCRIPTORIUM_MAX_DOCUMENT_PAGES, else no limit)
  --max-document-mb N
                    refuse larger documents, with the reason, before reading them (default
                    $SCRIPTORIUM_MAX_DOCUMENT_MB, else no limit)`;

export function documentLimitsOf(values: { 'max-document-pages': number | undefined; 'max-document-mb': number | undefined }): DocumentLimits {
  const maxMegabytes = values['max-document-mb'];
  return { maxPages: values['max-document-pages'], maxBytes: maxMegabytes === undefined ? undefined : maxMegabytes * MIB };
}

export const ENQUEUE_OPTIONS = { ...QUEUE_TARGET_OPTIONS, priority: PRIORITY_OPTION, ...OCR_JOB_OPTIONS, ...DOCUMENT_LIMIT_OPTIONS };

export const ENQUEUE_ARGS_USAGE = `  --to URL          storage for sources and results: ${STORAGE_URL_USAGE};
                    workers must use the same one
  --model DIR       the checkpoint workers will run, to take its variant (default $SCRIPTORIUM_MODEL,
                    else the synthetic tiny V3 checkpoint); --variant names it instead
${OCR_JOB_ARGS_USAGE}
${PRIORITY_USAGE}
  --attempts N      tries per page before it is recorded as failed (default ${DEFAULT_PAGE_ATTEMPTS})
${DOCUMENT_LIMITS_USAGE}`;

export type EnqueueSettings = Pick<EnqueueOptions, 'ocr' | 'storage' | 'pdfPassword' | 'priority' | 'attempts' | 'limits'>;

/** Checks the options together (a UsageError names the wrong one) and opens the storage. */
export async function enqueueSettingsOf(values: OptionValues<typeof ENQUEUE_OPTIONS>): Promise<EnqueueSettings> {
  const pdfPassword = pdfPasswordOf(values);
  const variant = await variantOf(values);
  const ocr = ocrJobOptionsOf(values, variant);
  return { ocr, storage: openCommandStorage(values.to), pdfPassword, priority: values.priority, attempts: values.attempts, limits: documentLimitsOf(values) };
}

/** --variant, else the variant of --model's checkpoint (default: the default model's). */
export async function variantOf(values: { model: string | undefined; variant: Variant | undefined }): Promise<Variant> {
  notBoth(values, 'model', 'variant');
  if (values.variant !== undefined) return values.variant;
  const model = await resolveModelDir(values.model);
  return (await loadModelConfig(model.dir)).variant;
}
