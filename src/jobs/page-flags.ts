// What a page is flagged for (docs/operations.md "Page flags"): it ran out of tokens, its deadline
// stopped it, its generation loops, or it has no text. A flagged page is done; the flags say whether
// a person should look at it. Page results, document.json and the queue's return values carry them.
import { z } from 'zod';

/** Why a page's decoding stopped: an end of text, the token budget, or the page's deadline. */
export const FINISH_REASONS = ['eos', 'max_tokens', 'timeout'] as const;
export type FinishReason = (typeof FINISH_REASONS)[number];

export const PAGE_FLAGS = ['max_tokens', 'timeout', 'repetition', 'empty'] as const;
export type PageFlag = (typeof PAGE_FLAGS)[number];
export const pageFlagSchema = z.enum(PAGE_FLAGS);

/** A done page that carries flags, as document.json and the document's status list it. */
export const flaggedPageSchema = z.object({ page: z.number().int().positive(), flags: z.array(pageFlagSchema).min(1) });
export type FlaggedPage = z.infer<typeof flaggedPageSchema>;

/** The flags that make a page worth reading again; an empty page is flagged but may well be blank. */
const REVIEW_FLAGS: ReadonlySet<PageFlag> = new Set(['max_tokens', 'timeout', 'repetition']);

export function needsReview(flags: readonly PageFlag[]): boolean {
  return flags.some((flag) => REVIEW_FLAGS.has(flag));
}

/** A page's flags from how its decode stopped, whether it loops, and its markdown (whitespace only: empty). */
export function pageFlagsOf(page: { finish: FinishReason; looping: boolean; markdown: string }): PageFlag[] {
  const flags: PageFlag[] = [];
  if (page.finish !== 'eos') flags.push(page.finish);
  if (page.looping) flags.push('repetition');
  if (page.markdown.trim() === '') flags.push('empty');
  return flags;
}
