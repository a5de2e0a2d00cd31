// The result JSON the pipeline writes to storage (docs/design.md "Results"): one file per page and one per
// document. Declared once as schemas; parse* checks what is read back from storage.
import { z } from 'zod';

import { InvalidBoundaryDataError, parseBoundaryData } from './boundary-data.js';
import { documentTypeSchema, modeSchema, ocrJobOptionsSchema, stageSchema, stageTimingsSchema, taskSchema, variantSchema } from './job-types.js';
import { FINISH_REASONS, flaggedPageSchema, pageFlagSchema } from './page-flags.js';

const count = z.number().int().nonnegative();
const probability = z.number().min(0).max(1);

/**
 * Mean and lowest probability of the greedy choices of the generated tokens behind a page, a block or a
 * paragraph (docs/engine.md "Confidence"). Optional when read: results of earlier versions lack it.
 */
const confidenceJsonSchema = z.object({ mean: probability, min: probability });
export type ConfidenceJson = z.infer<typeof confidenceJsonSchema>;

const ocrBlockJsonSchema = z.object({
  type: z.string(),
  text: z.string(),
  box: z.tuple([z.number(), z.number(), z.number(), z.number()]).optional(),
  /** Over the tokens that produced this block; absent in results written before it was recorded. */
  confidence: confidenceJsonSchema.optional(),
});
export type OcrBlockJson = z.infer<typeof ocrBlockJsonSchema>;

/** Which model read the pages: never empty or guessed. */
const resultModelSchema = z.object({
  variant: variantSchema,
  task: taskSchema,
  mode: modeSchema,
  /** Identity of the checkpoint's files (sha256:…); never empty. */
  checkpoint: z.string().min(1),
  /** The checkpoint has random weights (`scriptorium model synth`): its text means nothing. */
  synthetic: z.boolean(),
});

/**
 * How a page was rendered for the model. Block boxes are pixels of this image, origin top left; for a
 * PDF page, x_pt = x_px × pdfPage.width / width and y_pt (from the bottom) = pdfPage.height − y_px ×
 * pdfPage.height / height.
 */
const pageRenderJsonSchema = z.object({
  /** The image's size in pixels. */
  width: z.number().int().positive(),
  height: z.number().int().positive(),
  /** PDF pages: the resolution they were rendered at, or the pixels on the longer side (never both). */
  dpi: z.number().positive().optional(),
  longestSide: z.number().int().positive().optional(),
  /** PDF pages: the page's size in points (1/72 inch), its rotation applied. */
  pdfPage: z.object({ width: z.number().positive(), height: z.number().positive() }).optional(),
});
export type PageRenderJson = z.infer<typeof pageRenderJsonSchema>;

/** Which Scriptorium wrote a result. */
const scriptoriumBuildJsonSchema = z.object({
  version: z.string(),
  /** The git commit it was built from, or 'unknown'. */
  commit: z.string(),
});
export type ScriptoriumBuildJson = z.infer<typeof scriptoriumBuildJsonSchema>;

/** Results written before the budget's reason was named max_tokens say 'length'. */
const finishSchema = z.preprocess((finish) => (finish === 'length' ? 'max_tokens' : finish), z.enum(FINISH_REASONS));

/** A loop in a page's generated tokens (engine/repetition.ts). */
const repetitionJsonSchema = z.object({ start: count, span: z.number().int().positive(), repeats: z.number().int().positive() });

/** results/<docId>/pages/<nnnn>.json */
const pageResultJsonSchema = z.object({
  docId: z.string(),
  source: z.object({ uri: z.string(), page: z.number().int().positive() }),
  render: pageRenderJsonSchema,
  model: resultModelSchema,
  markdown: z.string(),
  blocks: z.array(ocrBlockJsonSchema),
  /** The markdown's blank-line separated paragraphs, each with its confidence. */
  paragraphs: z.array(z.object({ text: z.string(), confidence: confidenceJsonSchema })).optional(),
  tokens: z.object({ prompt: count, image: count, generated: count }),
  finish: finishSchema,
  /** Written by every current worker; absent from results of earlier versions. */
  flags: z.array(pageFlagSchema).optional(),
  /** The page should be looked at by a person (max_tokens, timeout or repetition; an empty page is not). */
  needs_review: z.boolean().optional(),
  /** Only when the generation loops. */
  repetition: repetitionJsonSchema.optional(),
  timings_ms: stageTimingsSchema,
  worker: z.object({ host: z.string().min(1), backend: z.string().min(1), attempt: z.number().int().positive() }),
  scriptorium: scriptoriumBuildJsonSchema,
  /** The page's confidence; absent in results written before it was recorded. */
  confidence: confidenceJsonSchema.optional(),
});
export type PageResultJson = z.infer<typeof pageResultJsonSchema>;

const stageSummarySchema = z.object({ total: z.number(), p50: z.number(), p90: z.number(), p99: z.number(), max: z.number() });

/** results/<docId>/document.json */
const documentResultJsonSchema = z.object({
  docId: z.string(),
  source: z.object({ uri: z.string(), type: documentTypeSchema, pages: z.number().int().positive() }),
  /** The model of the pages read; null when no page was read. */
  model: resultModelSchema.nullable(),
  pages: z.array(z.object({ page: z.number().int().positive(), status: z.literal('done'), key: z.string() })),
  failedPages: z.array(z.object({ page: z.number().int().positive(), reason: z.string() })),
  /** The done pages that carry flags; absent from documents assembled by earlier versions. */
  flagged: z.array(flaggedPageSchema).optional(),
  /** Only for a damaged document that was rebuilt: what is wrong; the pages it lost are failed pages. */
  damage: z.string().optional(),
  /** Per stage over the document's done pages: total and percentiles in milliseconds. */
  timings_ms: z.record(stageSchema, stageSummarySchema),
  /**
   * Over the done pages that carry a confidence: the mean of their means, their means in 10 bins
   * ([0, 0.1), … [0.9, 1]) and up to 10 pages, lowest mean first; null when no page carries one.
   */
  confidence: z
    .object({
      mean: probability,
      histogram: z.array(count).length(10),
      leastConfident: z.array(z.object({ page: z.number().int().positive(), mean: probability, min: probability })).max(10),
    })
    .nullable()
    .optional(),
  completedAt: z.string(),
  scriptorium: scriptoriumBuildJsonSchema,
});
export type DocumentResultJson = z.infer<typeof documentResultJsonSchema>;

/**
 * results/<docId>/_DONE, written last when every page was read: the options the document was read
 * with, which `scriptorium retry --flagged` starts from (markers of earlier versions hold no options).
 * Both markers name the assembly that wrote them (`assembly`: its document job's id and creation
 * time), when a queue's document job wrote them.
 */
const doneMarkerJsonSchema = z.object({ docId: z.string(), options: ocrJobOptionsSchema, completedAt: z.string(), assembly: z.string().optional() });
export type DoneMarkerJson = z.infer<typeof doneMarkerJsonSchema>;

/** A _DONE marker as stored, checked like a page result. */
export function parseDoneMarkerJson(text: string, key: string): DoneMarkerJson {
  return parseBoundaryData(doneMarkerJsonSchema, parseJson(text, key), key);
}

/**
 * results/<docId>/_FAILED_PAGES, written instead of _DONE when a page failed: the reasons, and what
 * `scriptorium retry` needs to queue those pages again from the staged source.
 */
const failedPagesMarkerJsonSchema = z.object({
  docId: z.string(),
  sourceUri: z.string(),
  type: documentTypeSchema,
  options: ocrJobOptionsSchema,
  failedPages: z.array(z.object({ page: z.number().int().positive(), reason: z.string() })),
  completedAt: z.string(),
  assembly: z.string().optional(),
});
export type FailedPagesMarkerJson = z.infer<typeof failedPagesMarkerJsonSchema>;

/** A _FAILED_PAGES marker as stored, checked like a page result. */
export function parseFailedPagesMarkerJson(text: string, key: string): FailedPagesMarkerJson {
  return parseBoundaryData(failedPagesMarkerJsonSchema, parseJson(text, key), key);
}

/** A document.json as stored, checked like a page result. */
export function parseDocumentResultJson(text: string, key: string): DocumentResultJson {
  return parseBoundaryData(documentResultJsonSchema, parseJson(text, key), key);
}

/** A page result about to be written, checked as it will be read: its provenance is never empty. */
export function checkPageResultJson(json: PageResultJson): PageResultJson {
  return parseBoundaryData(pageResultJsonSchema, json, `the result of page ${json.source.page} of ${json.docId}`);
}

/** A page result as stored: JSON text, checked; an InvalidBoundaryDataError names `key` and what is wrong. */
export function parsePageResultJson(text: string, key: string): PageResultJson {
  return parseBoundaryData(pageResultJsonSchema, parseJson(text, key), key);
}

function parseJson(text: string, key: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidBoundaryDataError(`${key} is not JSON: ${(error as Error).message}`);
  }
}
