// The side-by-side page view, the one renderer of the viewer's page and the HTML export's pages: the
// page image with the grounding boxes drawn over it as SVG (colour by block type, low confidence
// dashed), and beside it the page's reading, block by block. A block's box and its text carry the
// same data-block id, which the viewer's script uses to highlight both together. Everything from a
// result is escaped; the markup's style lives in viewer/page-view.css.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import { needsReview } from '../jobs/page-flags.js';
import type { DocumentResultJson, OcrBlockJson, PageResultJson } from '../jobs/result-json.js';
import { escapeHtml, markdownHtml } from './safe-markdown.js';

/** A block whose least confident token is below this is marked low confidence. */
export const LOW_CONFIDENCE_MIN = 0.5;

/** The viewer's static files (its script and style sheets): viewer/ at the package root, from src/output/ or dist/src/output/. */
export const VIEWER_ASSETS_DIR = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../../viewer/' : '../../viewer/', import.meta.url));

export interface PageViewInput {
  page: number;
  /** The page's result; undefined for a page without one (failed, or not read yet). */
  result?: PageResultJson;
  /** Why the page could not be read, when it failed. */
  failure?: string;
  /** The page image: a URL or a data: URI; undefined when there is none to show. */
  imageSrc?: string;
}

let styleSheet: Promise<string> | undefined;

/** viewer/page-view.css, read once: the style of the page view, linked by the viewer and inlined by the export. */
export function pageViewCss(): Promise<string> {
  styleSheet ??= readFile(`${VIEWER_ASSETS_DIR}page-view.css`, 'utf8');
  return styleSheet;
}

/** The pages of a document that need review (flagged with max_tokens, timeout or repetition), in order. */
export function pagesNeedingReview(document: DocumentResultJson): number[] {
  return (document.flagged ?? []).filter(({ flags }) => needsReview(flags)).map(({ page }) => page);
}

export function pageViewHtml({ page, result, failure, imageSrc }: PageViewInput): string {
  const blocks = result?.blocks ?? [];
  return `<section class="page-view" id="page-${page}" data-page="${page}">
${pageHead(page, result)}
${failure === undefined ? '' : `<p class="failed">This page could not be read: ${escapeHtml(failure)}</p>\n`}<div class="page-columns">
<figure class="page-image">${pageFigure(page, result, imageSrc)}</figure>
<div class="page-text">
${blocks.length === 0 ? `<div class="page-markdown">${markdownHtml(result?.markdown ?? '')}</div>` : blocks.map((block, index) => blockText(page, block, index)).join('\n')}
</div>
</div>
</section>`;
}

function pageHead(page: number, result: PageResultJson | undefined): string {
  const parts = [`<h2>Page ${page}</h2>`];
  if (result?.confidence !== undefined) parts.push(`<span class="confidence">${confidenceText(result.confidence)}</span>`);
  if (result?.needs_review === true) parts.push('<span class="review">needs review</span>');
  for (const flag of result?.flags ?? []) parts.push(`<span class="flag">${escapeHtml(flag)}</span>`);
  return `<header class="page-head">${parts.join(' ')}</header>`;
}

/** The image in the worker's pixel space, so that the boxes need no scaling; a page without a result shows its image alone. */
function pageFigure(page: number, result: PageResultJson | undefined, imageSrc: string | undefined): string {
  if (result === undefined) return imageSrc === undefined ? '' : `<img src="${escapeHtml(imageSrc)}" alt="page ${page}">`;
  const { width, height } = result.render;
  const image = imageSrc === undefined ? '' : `<image href="${escapeHtml(imageSrc)}" x="0" y="0" width="${width}" height="${height}" preserveAspectRatio="none"/>`;
  const boxes = result.blocks.flatMap((block, index) => {
    if (block.box === undefined) return [];
    const [x0, y0, x1, y1] = block.box;
    return [
      `<rect class="${blockClasses('box', block)}" data-block="${blockId(page, index)}" x="${x0}" y="${y0}" width="${Math.max(0, x1 - x0)}" height="${Math.max(0, y1 - y0)}"><title>${blockLabel(block)}</title></rect>`,
    ];
  });
  return `<svg class="page-boxes" viewBox="0 0 ${width} ${height}" role="img" aria-label="page ${page} with its blocks">${image}${boxes.join('')}</svg>`;
}

function blockText(page: number, block: OcrBlockJson, index: number): string {
  const body = block.text === '' ? '' : markdownHtml(block.text);
  return `<div class="${blockClasses('block', block)}" data-block="${blockId(page, index)}"><span class="block-label">${blockLabel(block)}</span>${body}</div>`;
}

/** Unique in a document, so the export's pages never share one. */
function blockId(page: number, index: number): string {
  return `p${page}-b${index}`;
}

function blockClasses(kind: 'box' | 'block', block: OcrBlockJson): string {
  const type = block.type.toLowerCase().replace(/[^a-z0-9_-]/g, '_');
  const low = block.confidence !== undefined && block.confidence.min < LOW_CONFIDENCE_MIN;
  return `${kind} type-${type}${low ? ' low' : ''}`;
}

function blockLabel(block: OcrBlockJson): string {
  return escapeHtml(block.confidence === undefined ? block.type : `${block.type} · ${confidenceText(block.confidence)}`);
}

function confidenceText({ mean, min }: { mean: number; min: number }): string {
  return `confidence ${mean.toFixed(2)} (lowest ${min.toFixed(2)})`;
}
