// Splitting a document into V3 one-shot multi-page requests (docs/model.md §9): every page of a request costs
// 273 prompt ids (base mode) plus the output it will produce, all inside one 32768-token context.
import { V3_CONTEXT_LIMIT } from './prompts.js';

/** `<image>` ids per page in V3 multi-page (base mode, 1024 view): 16·17 + 1. */
export const V3_IMAGE_TOKENS_PER_PAGE = 273;

export interface PageGroupOptions {
  /** Prompt + output tokens one request may hold. Default 32768 (V3 `max_length`). */
  contextLimit?: number;
  /** Output tokens reserved for each page. */
  outputBudgetPerPage: number;
  /** Text ids of the prompt besides BOS and the image ids (4 for `<image>Multi page parsing.`). */
  promptTokens: number;
  /** Image ids per page. Default 273. */
  imageTokensPerPage?: number;
}

/** Pages start … end − 1 (0-based) go into one request. */
export interface PageGroup {
  start: number;
  end: number;
}

/**
 * Consecutive pages packed greedily into requests so that 1 (BOS) + imageTokensPerPage·n + promptTokens +
 * outputBudgetPerPage·n ≤ contextLimit for each; the pages that do not fit start the next request.
 */
export function planPageGroups(pageCount: number, options: PageGroupOptions): PageGroup[] {
  const { contextLimit = V3_CONTEXT_LIMIT, outputBudgetPerPage, promptTokens, imageTokensPerPage = V3_IMAGE_TOKENS_PER_PAGE } = options;
  for (const [name, value] of Object.entries({ pageCount, outputBudgetPerPage, promptTokens, imageTokensPerPage, contextLimit })) {
    if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  }
  const perPage = imageTokensPerPage + outputBudgetPerPage;
  const pagesPerGroup = Math.floor((contextLimit - 1 - promptTokens) / perPage);
  if (pagesPerGroup < 1) {
    throw new RangeError(
      `one page needs 1 + ${promptTokens} prompt + ${imageTokensPerPage} image + ${outputBudgetPerPage} output = ` +
        `${1 + promptTokens + perPage} tokens, over the context limit ${contextLimit}: lower outputBudgetPerPage`,
    );
  }
  const groups: PageGroup[] = [];
  for (let start = 0; start < pageCount; start += pagesPerGroup) {
    groups.push({ start, end: Math.min(start + pagesPerGroup, pageCount) });
  }
  return groups;
}
