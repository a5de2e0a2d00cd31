// "--pages 1-3,5" style page selections, 1-based and inclusive: the text is checked when the command
// line is read, the ranges against the page count once the document is open.
import { parsedBy } from './options.js';
import { UsageError } from './usage.js';

/** First and last page, 1-based, first <= last. */
export type PageRange = readonly [number, number];

export function parsePageRanges(spec: string): PageRange[] {
  return spec.split(',').map((part) => {
    const match = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(part);
    if (!match) throw new Error(`--pages: "${part}" is not a page or range like 3 or 1-5`);
    const first = Number(match[1]);
    const last = match[2] === undefined ? first : Number(match[2]);
    if (first < 1 || last < first) throw new Error(`--pages: "${part}" is not an ascending range of pages from 1`);
    return [first, last] as const;
  });
}

/** Undefined when not given: every page. */
export const PAGES_OPTION = parsedBy(parsePageRanges);

/** 1-based pages the ranges select (all when undefined), in document order, no repeats. */
export function selectedPages(ranges: readonly PageRange[] | undefined, pageCount: number): number[] {
  if (ranges === undefined) return Array.from({ length: pageCount }, (_, i) => i + 1);
  const pages = new Set<number>();
  for (const [first, last] of ranges) {
    if (last > pageCount) throw new UsageError(`--pages: ${first === last ? first : `${first}-${last}`} goes past the last page (${pageCount})`);
    for (let page = first; page <= last; page++) pages.add(page);
  }
  return [...pages].sort((a, b) => a - b);
}
