// The shapes that cross process boundaries: BullMQ job data (keys and options, never bytes) and the
// result JSON written to storage (DESIGN.md "Data flow" and "Results"). Declared once, imported by
// the producer, the worker and the CLI.
import type { VisionMode } from '../engine/image-tokens.js';
import type { Variant } from '../engine/model-config.js';
import type { OcrTask } from '../engine/prompts.js';
import type { DocumentType } from '../documents/document-type.js';
import type { SealedPdfPassword } from '../documents/document.js';
import type { DocumentKeys } from './storage-layout.js';

export const DOCUMENTS_QUEUE = 'scriptorium:documents';
export const PAGES_QUEUE = 'scriptorium:pages';

/** Options that change the output; part of the docId. */
export interface OcrJobOptions {
  variant: Variant;
  task: OcrTask;
  mode: VisionMode;
  /** PDF rasterisation: dots per inch, or else pixels on each page's longer side; never both. */
  dpi?: number;
  longestSide?: number;
  maxNewTokens?: number;
}

export interface DocumentJobData {
  docId: string;
  /** Where the document came from, for the result JSON (s3://…, file path, or archive!entry). */
  sourceUri: string;
  type: DocumentType;
  pageCount: number;
  keys: DocumentKeys;
  options: OcrJobOptions;
  enqueuedAt: number;
}

/** One page, or for V3 single pass a range of pages [firstPage, lastPage] (1-based, inclusive). */
export interface PageJobData {
  docId: string;
  sourceUri: string;
  type: DocumentType;
  firstPage: number;
  lastPage: number;
  keys: DocumentKeys;
  options: OcrJobOptions;
  /** Only for an encrypted PDF: its password, sealed to the document's bytes (never in clear). */
  pdfPassword?: SealedPdfPassword;
  enqueuedAt: number;
}

export type Stage = 'queued' | 'fetch' | 'render' | 'preprocess' | 'encode' | 'prefill' | 'decode' | 'postprocess' | 'store' | 'total';

export type StageTimings = Record<Stage, number>;

export interface OcrBlockJson {
  type: string;
  text: string;
  box?: [number, number, number, number];
}

/**
 * How a page was rendered for the model. Block boxes are pixels of this image, origin top left; for a
 * PDF page, x_pt = x_px × pdfPage.width / width and y_pt (from the bottom) = pdfPage.height − y_px ×
 * pdfPage.height / height.
 */
export interface PageRenderJson {
  /** The image's size in pixels. */
  width: number;
  height: number;
  /** PDF pages: the resolution they were rendered at, or the pixels on the longer side (never both). */
  dpi?: number;
  longestSide?: number;
  /** PDF pages: the page's size in points (1/72 inch), its rotation applied. */
  pdfPage?: { width: number; height: number };
}

/** Which Scriptorium wrote a result. */
export interface ScriptoriumBuildJson {
  version: string;
  /** The git commit it was built from, or 'unknown'. */
  commit: string;
}

/** results/<docId>/pages/<nnnn>.json */
export interface PageResultJson {
  docId: string;
  source: { uri: string; page: number };
  render: PageRenderJson;
  model: { variant: Variant; task: OcrTask; mode: VisionMode; checkpoint: string; synthetic: boolean };
  markdown: string;
  blocks: OcrBlockJson[];
  tokens: { prompt: number; image: number; generated: number };
  finish: 'eos' | 'length';
  timings_ms: StageTimings;
  worker: { host: string; backend: string; attempt: number };
  scriptorium: ScriptoriumBuildJson;
}

/**
 * results/<docId>/_FAILED_PAGES, written instead of _DONE when a page failed: the reasons, and what
 * `scriptorium retry` needs to queue those pages again from the staged source.
 */
export interface FailedPagesMarkerJson {
  docId: string;
  sourceUri: string;
  type: DocumentType;
  options: OcrJobOptions;
  failedPages: { page: number; reason: string }[];
  completedAt: string;
}

/** results/<docId>/document.json */
export interface DocumentResultJson {
  docId: string;
  source: { uri: string; type: DocumentType; pages: number };
  model: PageResultJson['model'];
  pages: { page: number; status: 'done'; key: string }[];
  failedPages: { page: number; reason: string }[];
  /** Per stage over the document's done pages: total and percentiles in milliseconds. */
  timings_ms: Record<Stage, { total: number; p50: number; p90: number; p99: number; max: number }>;
  completedAt: string;
  scriptorium: ScriptoriumBuildJson;
}

