// The shapes of the HTTP API (`scriptorium serve`), declared once: the server answers with them,
// the client in src/client returns them, and openapi.ts describes them for everyone else.
import type { PageFlag } from '../jobs/page-flags.js';
import type { OcrTask, Variant, VisionMode } from '../vocabulary/ocr-vocabulary.js';
import type { PriorityClass } from '../queue/job-options.js';
import type { QuotaName } from '../queue/key-quotas.js';
import type { VariantCapacity } from '../queue/queue-capacity.js';

/** Submission options, as multipart form fields or JSON members; all optional (the server's defaults apply). */
export interface SubmitOptions {
  variant?: Variant;
  task?: OcrTask;
  mode?: VisionMode;
  /** PDF rendering resolution; or longestSide, never both. */
  dpi?: number;
  longestSide?: number;
  maxTokens?: number;
  /** 1 (served first) … 2^21-1 (last). */
  priority?: number;
  /** Opens an encrypted PDF; jobs carry it sealed to the document, never in clear. */
  password?: string;
  /** Receives one signed POST when the document settles (its host must be allowed by the server). */
  callbackUrl?: string;
}

/** POST /v1/documents with a JSON body: a document in a bucket, or (where the server allows its host) on the web. */
export interface SubmitByReference extends SubmitOptions {
  /** s3://bucket/key: that object alone. */
  uri?: string;
  /** https://host/path, fetched by the server when its host is allowed. */
  url?: string;
}

export interface DocumentLinks {
  self: string;
  result: string;
  events: string;
}

/** 202 to a submission. `state` says whether it was queued now or earlier, or finished already. */
export interface SubmitAnswer {
  docId: string;
  state: 'enqueued' | 'already-done' | 'already-queued' | 'retried';
  pages: number;
  links: DocumentLinks;
}

/**
 * Where a document stands: queued (no page settled yet), running, completed (every page read),
 * partial (settled with failed pages), failed (its assembly failed after every try).
 */
export type DocumentState = 'queued' | 'running' | 'completed' | 'partial' | 'failed';

export interface DocumentStatus {
  docId: string;
  state: DocumentState;
  /** flagged: the done pages that carry flags (they count as done too). */
  pages: { total: number; done: number; failed: number; pending: number; flagged: number };
  failedPages: { page: number; reason: string }[];
  /** The done pages that carry flags (docs/operations.md "Page flags"), in page order. */
  flaggedPages: { page: number; flags: PageFlag[] }[];
  /** Why the document job failed (state 'failed' only). */
  reason?: string;
  /**
   * Seconds until the pages queue as it stands now is drained at its rate of the last ten minutes: an
   * upper bound for this document's pages at the default priority. null when settled, while no worker
   * serves the queue, or without a recent rate.
   */
  etaSeconds: number | null;
  links: DocumentLinks;
}

export interface ApiError {
  error: string;
}

/** 429 to a submission over one of its key's quotas (with Retry-After). */
export interface QuotaExceeded extends ApiError {
  quota: QuotaName;
  limit: number;
  usage: number;
  /** pages-per-day: the next UTC midnight (ISO 8601); documents-in-flight: null, a place frees when one of the key's documents settles. */
  resetsAt: string | null;
}

/** GET /v1/capacity: what is queued, what can still be accepted, and the calling key's quotas. */
export interface CapacityAnswer {
  /** Per variant: page jobs queued or being read, the server's --max-queued-pages and the page jobs it still accepts (null: no limit). */
  variants: Record<Variant, VariantCapacity>;
  redis: {
    usedMemoryBytes: number;
    /** null: Redis has no maxmemory. */
    maxMemoryBytes: number | null;
    /** false while Redis is short of memory: submissions are answered 503. */
    accepting: boolean;
  };
  key: {
    name: string;
    priorityClass: PriorityClass;
    pagesToday: number;
    /** null: no limit. */
    pagesPerDay: number | null;
    documentsInFlight: number;
    documentsInFlightLimit: number | null;
    /** When pagesToday starts again from 0: the next UTC midnight. */
    resetsAt: string;
  };
}

export interface HealthAnswer {
  status: 'ok';
}

export interface ReadinessAnswer {
  redis: 'ok' | 'unreachable';
  storage: 'ok' | 'unreachable';
}

export const RESULT_FORMATS = ['md', 'json', 'html', 'pdf'] as const;
/** What a searchable PDF does on pages that already have text: see TEXT_LAYERS. */
export type { TextLayer } from '../output/searchable-pdf.js';
/** Formats of a single page's result. */
export const PAGE_FORMATS = ['md', 'json'] as const;
export type PageFormat = (typeof PAGE_FORMATS)[number];
export type ResultFormat = (typeof RESULT_FORMATS)[number];
