// The shapes that cross the queue (docs/design.md "Data flow"): BullMQ job data (keys and options, never
// bytes) and job return values. Declared once as schemas, imported by the producer, the worker, the
// CLI and the tests; parse* checks what is read back from Redis.
import { z } from 'zod';

import type { DocumentType } from '../documents/document-type.js';
import { OCR_TASKS, VARIANTS, VISION_MODES } from '../vocabulary/ocr-vocabulary.js';
import { parseBoundaryData } from './boundary-data.js';
import { flaggedPageSchema, pageFlagSchema } from './page-flags.js';

export const DOCUMENTS_QUEUE = '{scriptorium}:documents';

const positiveInteger = z.number().int().positive();

export const variantSchema = z.enum(VARIANTS);
export const taskSchema = z.enum(OCR_TASKS);
export const modeSchema = z.enum(VISION_MODES);
export const documentTypeSchema = z.enum(['pdf', 'png', 'jpeg', 'webp', 'gif', 'bmp', 'tiff']) satisfies z.ZodType<DocumentType>;

/** Options that change the output; part of the docId. */
export const ocrJobOptionsSchema = z.object({
  variant: variantSchema,
  task: taskSchema,
  mode: modeSchema,
  /** PDF rasterisation: dots per inch, or else pixels on each page's longer side; never both. */
  dpi: positiveInteger.optional(),
  longestSide: positiveInteger.optional(),
  maxNewTokens: positiveInteger.optional(),
});
export type OcrJobOptions = z.infer<typeof ocrJobOptionsSchema>;

const documentKeysSchema = z.object({
  /** staging/<docId>/source.<type> (storage-layout.ts) */
  source: z.string().min(1),
  /** results/<docId>/ */
  results: z.string().min(1),
});

const documentJobDataSchema = z.object({
  docId: z.string().regex(/^[0-9a-f]{32}$/),
  /** Where the document came from, for the result JSON (s3://…, file path, or archive!entry). */
  sourceUri: z.string(),
  /**
   * The storage the producer staged the source in and the results belong to (its Storage.url). A
   * worker of another storage leaves the job for a worker of this one (queue/storage-affinity.ts).
   */
  storage: z.string().min(1),
  type: documentTypeSchema,
  pageCount: positiveInteger,
  keys: documentKeysSchema,
  options: ocrJobOptionsSchema,
  enqueuedAt: z.number(),
  /** A damaged document that was rebuilt: what is wrong and how many pages can be read (document.json `damage`). */
  damage: z.string().optional(),
});
export type DocumentJobData = z.infer<typeof documentJobDataSchema>;

/** One page, or for V3 single pass a range of pages [firstPage, lastPage] (1-based, inclusive). */
const pageJobDataSchema = documentJobDataSchema
  .omit({ pageCount: true, damage: true })
  .extend({
    firstPage: positiveInteger,
    lastPage: positiveInteger,
    /** Only for an encrypted PDF: its password, sealed to the document's bytes (never in clear). */
    pdfPassword: z.object({ iv: z.string(), ciphertext: z.string(), tag: z.string() }).optional(),
  })
  .refine((data) => data.lastPage >= data.firstPage, { message: 'lastPage is before firstPage', path: ['lastPage'] });
export type PageJobData = z.infer<typeof pageJobDataSchema>;

export const stageSchema = z.enum(['queued', 'fetch', 'render', 'preprocess', 'encode', 'prefill', 'decode', 'postprocess', 'store', 'total']);
export type Stage = z.infer<typeof stageSchema>;
export const stageTimingsSchema = z.record(stageSchema, z.number());
export type StageTimings = z.infer<typeof stageTimingsSchema>;

/** One page whose results are in storage. */
const storedPageSchema = z.object({
  page: positiveInteger,
  /** results/<docId>/pages/<nnnn>.json */
  key: z.string().min(1),
  /** results/<docId>/pages/<nnnn>.md */
  markdownKey: z.string().min(1),
  /** As in the JSON, except that store and total here include the JSON's own write. */
  timings_ms: stageTimingsSchema,
  /** The page's flags, as in its JSON; absent from the return values of earlier versions. */
  flags: z.array(pageFlagSchema).optional(),
  /**
   * Where the try that read the page wrote it (results/<docId>/attempts/…), for whoever commits it
   * once the job's completion is recorded: copied to key and markdownKey, then removed. Absent when the
   * page was already at key (found in storage, or written by an earlier version).
   */
  attempt: z.object({ key: z.string().min(1), markdownKey: z.string().min(1) }).optional(),
});
export type StoredPage = z.infer<typeof storedPageSchema>;

/** A page job's return value: all its pages (one, or a V3 page group) are stored. */
const donePageOutcomeSchema = z.object({
  status: z.literal('done'),
  docId: z.string(),
  jobId: z.string().optional(),
  pages: z.array(storedPageSchema),
});
export type DonePageOutcome = z.infer<typeof donePageOutcomeSchema>;

/** How a page job ended in the worker: done, or failed with its reason (thrown to the queue, never returned). */
export type PageOutcome =
  | DonePageOutcome
  | {
      status: 'failed';
      docId: string;
      jobId?: string;
      pages: number[];
      /** One line for document.json and the logs. */
      reason: string;
      /** Whether another try can help (see worker/page-failure.ts). */
      retryable: boolean;
    };

/** A document job's return value. */
const documentOutcomeSchema = z.object({
  docId: z.string(),
  /** results/<docId>/document.md */
  markdown: z.string(),
  /** results/<docId>/document.json */
  json: z.string(),
  pages: positiveInteger,
  failedPages: z.array(z.object({ page: positiveInteger, reason: z.string() })),
  /** As in document.json: the done pages that carry flags; absent from the return values of earlier versions. */
  flagged: z.array(flaggedPageSchema).optional(),
  /** As in DocumentJobData: the document was damaged; some of its pages may be missing. */
  damage: z.string().optional(),
});
export type DocumentOutcome = z.infer<typeof documentOutcomeSchema>;

export function parsePageJobData(value: unknown): PageJobData {
  return parseBoundaryData(pageJobDataSchema, value, 'page job data');
}

export function parseDocumentJobData(value: unknown): DocumentJobData {
  return parseBoundaryData(documentJobDataSchema, value, 'document job data');
}

export function parseDonePageOutcome(value: unknown): DonePageOutcome {
  return parseBoundaryData(donePageOutcomeSchema, value, 'a page job return value');
}

export function parseDocumentOutcome(value: unknown): DocumentOutcome {
  return parseBoundaryData(documentOutcomeSchema, value, 'a document job return value');
}
