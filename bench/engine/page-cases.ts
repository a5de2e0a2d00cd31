// The page configurations the benchmark measures, and the synthetic page images they read. Speed
// does not depend on pixel values, only on the views a page becomes, which the page size decides.
import type { OcrTask, Variant, VisionMode } from '../../src/vocabulary/ocr-vocabulary.js';
import type { RgbImage } from '../../src/documents/rgb-image.js';

export interface PageCase {
  id: string;
  variant: Variant;
  mode: VisionMode;
  task: OcrTask;
  /** Pages read in one prompt (more than one only for V3 parse-multi). */
  pages: number;
  /** Page size in pixels, [width, height]. */
  pageSize: [number, number];
  /** Local tiles per page this size gives in this mode (0: the global view only). */
  tiles: number;
}

/** An A4 page rendered at 150 DPI. */
const A4: [number, number] = [1240, 1754];

export const PAGE_CASES: readonly PageCase[] = [
  { id: 'v1-base', variant: 'v1', mode: 'base', task: 'markdown', pages: 1, pageSize: A4, tiles: 0 },
  // 2 × 3 tiles of 640 (the grid closest to A4's aspect) plus the 1024 global view.
  { id: 'v1-gundam', variant: 'v1', mode: 'gundam', task: 'markdown', pages: 1, pageSize: A4, tiles: 6 },
  // Pages within one 768 tile get no tiles: the 1024 global view alone.
  { id: 'v2-1view', variant: 'v2', mode: 'gundam', task: 'markdown', pages: 1, pageSize: [760, 760], tiles: 0 },
  { id: 'v2-4tiles', variant: 'v2', mode: 'gundam', task: 'markdown', pages: 1, pageSize: [1536, 1536], tiles: 4 },
  { id: 'v3-base', variant: 'v3', mode: 'base', task: 'parse', pages: 1, pageSize: A4, tiles: 0 },
  { id: 'v3-10pages', variant: 'v3', mode: 'base', task: 'parse-multi', pages: 10, pageSize: A4, tiles: 0 },
];

export function pageCase(id: string): PageCase {
  const found = PAGE_CASES.find((c) => c.id === id);
  if (!found) throw new Error(`unknown page case "${id}"; cases: ${PAGE_CASES.map((c) => c.id).join(', ')}`);
  return found;
}

/** A white page with dark text-like bars whose lengths vary from line to line; page `index` shifts them. */
export function syntheticPage([width, height]: readonly [number, number], index: number): RgbImage {
  const data = new Uint8Array(width * height * 3).fill(250);
  const lineHeight = Math.max(2, Math.round(height / 60));
  for (let line = 0, top = 2 * lineHeight; top + lineHeight < height; line++, top += 2 * lineHeight) {
    const length = Math.round(width * (0.5 + 0.4 * Math.abs(Math.sin(line * 1.7 + index))));
    for (let y = top; y < top + lineHeight; y++) data.fill(30, (y * width + Math.round(width * 0.05)) * 3, (y * width + length) * 3);
  }
  return { width, height, data };
}
