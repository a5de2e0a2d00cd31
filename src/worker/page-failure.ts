// Why a page job failed, and whether trying it again can help: the queue retries the one and gives
// up on the other at once (the document is then assembled with the page marked failed).
import { DocumentError } from '../documents/document.js';
import { StorageError, describeCause } from '../storage/storage-error.js';

export interface PageFailure {
  /** One line for document.json and the logs. */
  reason: string;
  /**
   * false: the input itself is bad (a page that cannot be rendered, a missing source), so another
   * attempt would fail the same way. true: the cause may pass (storage unreachable, anything unexpected).
   */
  retryable: boolean;
}

export function pageFailureOf(error: unknown): PageFailure {
  if (error instanceof DocumentError) return { reason: error.reason, retryable: false };
  if (error instanceof StorageError) return { reason: error.message, retryable: error.code === 'transient' };
  return { reason: describeCause(error), retryable: true };
}
