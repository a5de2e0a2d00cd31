// Decoded model output -> markdown and layout blocks, as the official save_results code does it (docs/model.md
// §11): grounding tags become blocks with pixel boxes and are removed from the markdown, `image` regions become
// markdown image links, two LaTeX macros are rewritten, and V3 multi-page output is split on `<PAGE>` markers.
// Unlike the official regexes, a tag never spans another tag, so a malformed tag cannot swallow the text after it.
// Every page, block and markdown paragraph keeps the span of the decoded output it came from, so that the
// tokens which produced it can be found (confidence.ts).
import type { TextSpan } from './confidence.js';
import { PYTHON_WHITESPACE, pythonStrip as strip } from './prompts.js';

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
  /** The tag and its content in the decoded output, up to the content's last character that is not white space. */
  span: TextSpan;
}

/** One paragraph of the markdown (paragraphs are separated by blank lines). */
export interface OcrParagraph {
  text: string;
  /** Where in the decoded output its text came from: the first to the last character that made it. */
  span: TextSpan;
}

export interface OcrPage {
  markdown: string;
  /** Grounded regions in output order; text before the first tag belongs to no block. */
  blocks: OcrBlock[];
  /** The markdown's paragraphs, in order; none when it is empty. */
  paragraphs: OcrParagraph[];
  /** The page's part of the decoded output: all of it, or for V3 multi-page output its page's segment. */
  span: TextSpan;
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

/** The text rewrites the official code applies to the markdown, in order. */
const REWRITES: ReadonlyArray<[string | RegExp, string]> = [
  ['\\coloneqq', ':='],
  ['\\eqqcolon', '=:'],
  [STRAY_TAG, ''],
];

function cleanText(text: string): string {
  return REWRITES.reduce((cleaned, [pattern, replacement]) => cleaned.replaceAll(pattern, replacement), text);
}

/**
 * Text whose every UTF-16 unit remembers the span of the decoded output it came from. Its edits are the
 * string edits the post-processing makes; a replacement's units take the span of what they replace.
 */
class SourcedText {
  private constructor(
    readonly text: string,
    private readonly starts: readonly number[],
    private readonly ends: readonly number[],
  ) {}

  /** `text` at `offset` of the decoded output. */
  static at(text: string, offset: number): SourcedText {
    const starts = Array.from({ length: text.length }, (_, i) => offset + i);
    return new SourcedText(text, starts, starts.map((start) => start + 1));
  }

  /** `text` that stands for `span` of the output (a tag's image link). */
  static standingFor(text: string, span: TextSpan): SourcedText {
    return new SourcedText(text, new Array<number>(text.length).fill(span.start), new Array<number>(text.length).fill(span.end));
  }

  static concat(parts: readonly SourcedText[]): SourcedText {
    return new SourcedText(parts.map((p) => p.text).join(''), parts.flatMap((p) => p.starts), parts.flatMap((p) => p.ends));
  }

  get length(): number {
    return this.text.length;
  }

  /** The output from the start of unit `start` to the end of unit `end - 1` (start < end). */
  span(start = 0, end = this.length): TextSpan {
    return { start: this.starts[start], end: this.ends[end - 1] };
  }

  slice(start: number, end: number): SourcedText {
    return new SourcedText(this.text.slice(start, end), this.starts.slice(start, end), this.ends.slice(start, end));
  }

  /** Every match of `pattern` (a global RegExp) or every occurrence of a string replaced by `replacement`. */
  replaceAll(pattern: RegExp | string, replacement: string): SourcedText {
    const matches: Array<[number, number]> = [];
    if (typeof pattern === 'string') {
      for (let i = this.text.indexOf(pattern); i !== -1; i = this.text.indexOf(pattern, i + pattern.length)) matches.push([i, i + pattern.length]);
    } else {
      for (const match of this.text.matchAll(pattern)) matches.push([match.index, match.index + match[0].length]);
    }
    const parts: SourcedText[] = [];
    let at = 0;
    for (const [start, end] of matches) {
      parts.push(this.slice(at, start));
      if (replacement) parts.push(SourcedText.standingFor(replacement, this.span(start, end)));
      at = end;
    }
    parts.push(this.slice(at, this.length));
    return SourcedText.concat(parts);
  }

  /** Python's strip(), as pythonStrip. */
  strip(): SourcedText {
    let start = 0;
    let end = this.length;
    while (start < end && PYTHON_WHITESPACE.includes(this.text[start])) start++;
    while (end > start && PYTHON_WHITESPACE.includes(this.text[end - 1])) end--;
    return this.slice(start, end);
  }
}

/** The paragraphs of the markdown: its blank-line separated parts, stripped, the empty ones dropped. */
function paragraphsOf(markdown: SourcedText): OcrParagraph[] {
  const bounds = [...markdown.text.matchAll(/\n\s*\n/g)].map((m): [number, number] => [m.index, m.index + m[0].length]);
  bounds.push([markdown.length, markdown.length]);
  const paragraphs: OcrParagraph[] = [];
  let at = 0;
  for (const [end, next] of bounds) {
    const paragraph = markdown.slice(at, end).strip();
    if (paragraph.length > 0) paragraphs.push({ text: paragraph.text, span: paragraph.span() });
    at = next;
  }
  return paragraphs;
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
 * pixels (boxes are omitted without it); `pageIndex` numbers the image links. Spans are offsets in `output`
 * plus `offset` (where `output` starts in the whole decoded output).
 */
export function parsePageOutput(output: string, size: PageSize | undefined, pageIndex = 0, options: PostprocessOptions = {}, offset = 0): OcrPage {
  const imageLink = options.imageLink ?? defaultImageLink;
  const source = SourcedText.at(output, offset).replaceAll(EOS_TEXT, '').strip();
  const text = source.text;
  const blocks: OcrBlock[] = [];
  const markdown: SourcedText[] = [];
  let end = 0;
  let blockStart = 0;
  let images = 0;
  const closeBlock = (contentEnd: number) => {
    const content = text.slice(end, contentEnd);
    markdown.push(source.slice(end, contentEnd));
    if (blocks.length === 0) return;
    const block = blocks[blocks.length - 1];
    block.text = strip(cleanText(content));
    let last = contentEnd;
    while (last > end && PYTHON_WHITESPACE.includes(text[last - 1])) last--;
    block.span = source.span(blockStart, last);
  };
  for (const match of text.matchAll(TAG_PATTERN)) {
    closeBlock(match.index);
    const label = strip(match[1] ?? match[3]);
    const boxes = pixelBoxes(match[2] ?? match[4], size);
    const tag = source.span(match.index, match.index + match[0].length);
    const block: OcrBlock = { type: label, text: '', boxes, span: tag };
    if (boxes.length > 0) block.box = boxes[0];
    if (label === 'image') {
      block.imageLink = imageLink(pageIndex, images++);
      markdown.push(SourcedText.standingFor(`![](${block.imageLink})\n`, tag));
    }
    blocks.push(block);
    blockStart = match.index;
    end = match.index + match[0].length;
  }
  closeBlock(text.length);
  const cleaned = REWRITES.reduce((sourced, [pattern, replacement]) => sourced.replaceAll(pattern, replacement), SourcedText.concat(markdown))
    .replaceAll(/\n{3,}/g, '\n\n')
    .strip();
  return { markdown: cleaned.text, blocks, paragraphs: paragraphsOf(cleaned), span: { start: offset, end: offset + output.length } };
}

/**
 * V3 multi-page output -> one page per `<PAGE>` marker, in order; whatever precedes the first marker is dropped
 * (the official split). Output without any marker is taken as one page. `sizes[i]` is page i's image size;
 * pages past the end of `sizes` (the model wrote more pages than it was given) keep their text without boxes.
 * Each page's span is its segment of `output`, from after its marker to the next marker or the end.
 */
export function parseMultiPageOutput(output: string, sizes: readonly PageSize[], options: PostprocessOptions = {}): OcrPage[] {
  if (!output.includes(PAGE_MARKER)) return [parsePageOutput(output, sizes[0], 0, options)];
  const pages: OcrPage[] = [];
  let at = output.indexOf(PAGE_MARKER) + PAGE_MARKER.length;
  while (at <= output.length) {
    const next = output.indexOf(PAGE_MARKER, at);
    const end = next === -1 ? output.length : next;
    pages.push(parsePageOutput(output.slice(at, end), sizes[pages.length], pages.length, options, at));
    if (next === -1) break;
    at = next + PAGE_MARKER.length;
  }
  return pages;
}
