// "--pages 1-3,5" style page selections, 1-based and inclusive, resolved against a page count.
import { UsageError } from './usage.js';

/** 0-based page indexes selected by `spec` ("all" when undefined), in document order, no repeats. */
export function parsePageRanges(spec: string | undefined, pageCount: number, usage: string): number[] {
  if (spec === undefined) return Array.from({ length: pageCount }, (_, i) => i);
  const pages = new Set<number>();
  for (const part of spec.split(',')) {
    const match = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(part);
    if (!match) throw new UsageError(`--pages: "${part}" is not a page or range like 3 or 1-5`, usage);
    const first = Number(match[1]);
    const last = match[2] === undefined ? first : Number(match[2]);
    if (first < 1 || last < first) throw new UsageError(`--pages: "${part}" is not an ascending range of pages from 1`, usage);
    if (last > pageCount) throw new UsageError(`--pages: "${part}" goes past the last page (${pageCount})`, usage);
    for (let page = first; page <= last; page++) pages.add(page - 1);
  }
  return [...pages].sort((a, b) => a - b);
}
