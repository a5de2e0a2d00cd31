// Decoded model output -> markdown and layout blocks, as the official save_results code does it (docs/model.md
// §11): grounding tags become blocks with pixel boxes and are removed from the markdown, `image` regions become
// markdown image links, two LaTeX macros are rewritten, and V3 multi-page output is split on `<PAGE>` markers.
// Unlike the official regexes, a tag never spans another tag, so a malformed tag cannot swallow the text after it.
import { pythonStrip as strip } from './prompts.js';

/** [x0, y0, x1, y1] in page pixels. */
export type PixelBox = [number, number, number, number];

export interface PageSize {
  width: number;
  height: number;
}

export interface OcrBlock {
  /** The tag's label: text, title, image, table, figure, … */
  type: string;
  /** The content after the tag up to the next tag, stripped. */
  text: string;
  /** The first box; absent when the tag's coordinates do not parse or the page size is unknown. */
  box?: PixelBox;
  /** Every box of the tag (the `<|ref|>` form may list several). */
  boxes: PixelBox[];
  /** For `image` blocks: the link target written into the markdown in place of the tag. */
  imageLink?: string;
}

export interface OcrPage {
  markdown: string;
  /** Grounded regions in output order; text before the first tag belongs to no block. */
  blocks: OcrBlock[];
}

export interface PostprocessOptions {
  /**
   * Link target for the n-th `image` region (0-based) of the page with 0-based index `page`. Default
   * `images/<page>_<n>.png`; the official scripts write `images/<n>.jpg` (one page) and
   * `images/page_<page>_<n>.jpg` (V3 multi-page) next to the markdown.
   */
  imageLink?: (page: number, index: number) => string;
}

export const EOS_TEXT = '<｜end▁of▁sentence｜>';
/** V3 multi-page output puts this before every page. */
export const PAGE_MARKER = '<PAGE>';

/** Coordinates are on a 0…999 grid: pixel = int(coord / 999 × side). */
const GRID_MAX = 999;

/** Label-and-box tags; neither part may contain another tag's `<|`. */
const TAG_PATTERN = new RegExp(
  [
    // V1/V2 (and V3): <|ref|>LABEL<|/ref|><|det|>[[x1, y1, x2, y2], …]<|/det|>
    String.raw`<\|ref\|>((?:(?!<\|)[\s\S])*?)<\|\/ref\|><\|det\|>((?:(?!<\|)[\s\S])*?)<\|\/det\|>`,
    // V3: <|det|>LABEL [x1, y1, x2, y2]<|/det|>
    String.raw`<\|det\|>\s*([A-Za-z_][\w-]*)\s*(\[[^\]]+\])\s*<\|\/det\|>`,
  ].join('|'),
  'g',
);
/** Pieces of broken tags, removed from text. */
const STRAY_TAG = /<\|\/?(?:ref|det)\|>/g;

const defaultImageLink = (page: number, index: number) => `images/${page}_${index}.png`;

/** The text rewrites the official code applies to the markdown. */
function cleanText(text: string): string {
  return text.replaceAll('\\coloneqq', ':=').replaceAll('\\eqqcolon', '=:').replace(STRAY_TAG, '');
}

/** One tag's coordinates as pixel boxes; [] when they are not a box or a list of boxes of 4 finite numbers. */
function pixelBoxes(payload: string, size: PageSize | undefined): PixelBox[] {
  if (!size) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return [];
  }
  const list = Array.isArray(parsed) && parsed.length > 0 && !Array.isArray(parsed[0]) ? [parsed] : parsed;
  if (!Array.isArray(list)) return [];
  const isBox = (box: unknown): box is number[] =>
    Array.isArray(box) && box.length === 4 && box.every((v) => typeof v === 'number' && Number.isFinite(v));
  if (!list.every(isBox)) return [];
  return list.map(([x0, y0, x1, y1]) => [
    Math.trunc((x0 / GRID_MAX) * size.width),
    Math.trunc((y0 / GRID_MAX) * size.height),
    Math.trunc((x1 / GRID_MAX) * size.width),
    Math.trunc((y1 / GRID_MAX) * size.height),
  ]);
}

/**
 * One page's decoded output (EOS text allowed) -> markdown and blocks. `size` is the page image's size in
 * pixels (boxes are omitted without it); `pageIndex` numbers the image links.
 */
export function parsePageOutput(output: string, size: PageSize | undefined, pageIndex = 0, options: PostprocessOptions = {}): OcrPage {
  const imageLink = options.imageLink ?? defaultImageLink;
  const text = strip(output.replaceAll(EOS_TEXT, ''));
  const blocks: OcrBlock[] = [];
  let markdown = '';
  let end = 0;
  let images = 0;
  const closeBlock = (contentEnd: number) => {
    const content = text.slice(end, contentEnd);
    markdown += content;
    if (blocks.length > 0) blocks[blocks.length - 1].text = strip(cleanText(content));
  };
  for (const match of text.matchAll(TAG_PATTERN)) {
    closeBlock(match.index);
    const label = strip(match[1] ?? match[3]);
    const boxes = pixelBoxes(match[2] ?? match[4], size);
    const block: OcrBlock = { type: label, text: '', boxes };
    if (boxes.length > 0) block.box = boxes[0];
    if (label === 'image') {
      block.imageLink = imageLink(pageIndex, images++);
      markdown += `![](${block.imageLink})\n`;
    }
    blocks.push(block);
    end = match.index + match[0].length;
  }
  closeBlock(text.length);
  return { markdown: strip(cleanText(markdown).replace(/\n{3,}/g, '\n\n')), blocks };
}

/**
 * V3 multi-page output -> one page per `<PAGE>` marker, in order; whatever precedes the first marker is dropped
 * (the official split). Output without any marker is taken as one page. `sizes[i]` is page i's image size;
 * pages past the end of `sizes` (the model wrote more pages than it was given) keep their text without boxes.
 */
export function parseMultiPageOutput(output: string, sizes: readonly PageSize[], options: PostprocessOptions = {}): OcrPage[] {
  const text = output.replaceAll(EOS_TEXT, '');
  const segments = text.includes(PAGE_MARKER) ? text.split(PAGE_MARKER).slice(1) : [text];
  return segments.map((segment, i) => parsePageOutput(segment, sizes[i], i, options));
}
