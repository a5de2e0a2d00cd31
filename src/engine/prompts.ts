// The official OCR prompts, their token ids with the `<image>` placeholder expanded, and the
// decoding settings the official scripts use with them (docs/model.md §6, §10).
import { tasksOf, type OcrTask, type Variant } from '../vocabulary/ocr-vocabulary.js';
import type { NoRepeatNgramOptions } from './logits-processors.js';
import type { Tokenizer } from './tokenizer.js';

/** The `<image>` placeholder: one per image in the text, K copies of IMAGE_TOKEN_ID in the ids. */
export const IMAGE_PLACEHOLDER = '<image>';
export const IMAGE_TOKEN_ID = 128815;

/** The official prompts; each variant has those of its tasks (ocr-vocabulary.ts tasksOf). */
const PROMPTS: Record<OcrTask, string> = {
  ocr: '<image>\nFree OCR.',
  markdown: '<image>\n<|grounding|>Convert the document to markdown.',
  parse: '<image>document parsing.',
  'parse-multi': '<image>Multi page parsing.',
};

/** The official prompt text for `task`; throws for a task the variant was not released with. */
export function promptText(variant: Variant, task: OcrTask): string {
  if (!tasksOf(variant).includes(task)) throw new RangeError(`${variant} has no ${task} prompt; use one of ${tasksOf(variant).join(', ')}`);
  return PROMPTS[task];
}

/** Python's str.isspace() set, which str.strip() removes (JavaScript's trim() differs: U+001C–U+001F, U+0085, U+FEFF). */
export const PYTHON_WHITESPACE = '\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000';

/** Python's `text.strip()`. */
export function pythonStrip(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && PYTHON_WHITESPACE.includes(text[start])) start++;
  while (end > start && PYTHON_WHITESPACE.includes(text[end - 1])) end--;
  return text.slice(start, end);
}

export interface PromptIds {
  /** BOS, the text ids, IMAGE_TOKEN_ID × K per image; no EOS. */
  ids: number[];
  /** Indices into ids of the image ids, in order: the positions the visual embeddings overwrite. */
  imagePositions: number[];
}

/**
 * Prompt ids as the official `plain` template builds them: the prompt stripped (Python `strip`), cut at each
 * `<image>`, every text piece encoded on its own (no BPE merge across an image), image i's K ids in its place,
 * BOS first. With one `<image>` and several images, all images' ids follow each other at that one place (V3
 * multi-page); otherwise there must be one placeholder per image.
 */
export function buildPromptIds(tokenizer: Tokenizer, bosId: number, text: string, imageTokenCounts: readonly number[]): PromptIds {
  const pieces = pythonStrip(text).split(IMAGE_PLACEHOLDER);
  const placeholders = pieces.length - 1;
  if (placeholders !== imageTokenCounts.length && !(placeholders === 1 && imageTokenCounts.length > 1)) {
    throw new RangeError(`prompt has ${placeholders} ${IMAGE_PLACEHOLDER} placeholder(s) for ${imageTokenCounts.length} image(s)`);
  }
  const groups = placeholders === imageTokenCounts.length ? imageTokenCounts.map((k) => [k]) : [imageTokenCounts];
  const ids = [bosId];
  const imagePositions: number[] = [];
  pieces.forEach((piece, i) => {
    ids.push(...tokenizer.encode(piece));
    if (i === placeholders) return;
    for (const count of groups[i]) {
      for (let k = 0; k < count; k++) {
        imagePositions.push(ids.length);
        ids.push(IMAGE_TOKEN_ID);
      }
    }
  });
  return { ids, imagePositions };
}

export interface GenerationDefaults {
  /** Most generated tokens. */
  maxNewTokens: number;
  /** Most prompt + generated tokens (vLLM's max_model_len, HF's max_length); generation also stops there. */
  maxTotalTokens: number;
  /** The sliding-window no-repeat-n-gram blocker (§10.2). */
  noRepeatNgram: NoRepeatNgramOptions;
}

/** `<td>`, `</td>`: never banned by the V1/V2 scripts' n-gram blocker, so table rows may repeat. */
const TABLE_CELL_IDS = [128821, 128822];
/** V3 `max_length`: prompt and output together (§9, §10.1). */
export const V3_CONTEXT_LIMIT = 32768;

/**
 * Decoding settings of the official scripts: V1 and V2 their vLLM image scripts (V1 n-gram 30 / window 90,
 * V2 20 / 90, both whitelisting `<td>`/`</td>`; max_tokens 8192 within max_model_len 8192); V3 its README
 * (35 / 128 for one page, 35 / 1024 for several, no whitelist, max_length 32768).
 */
export function generationDefaults(variant: Variant, task: OcrTask): GenerationDefaults {
  promptText(variant, task); // throws for a task the variant was not released with
  if (variant === 'v3') {
    return {
      maxNewTokens: V3_CONTEXT_LIMIT,
      maxTotalTokens: V3_CONTEXT_LIMIT,
      noRepeatNgram: { size: 35, window: task === 'parse-multi' ? 1024 : 128, whitelist: [] },
    };
  }
  return {
    maxNewTokens: 8192,
    maxTotalTokens: 8192,
    noRepeatNgram: { size: variant === 'v1' ? 30 : 20, window: 90, whitelist: TABLE_CELL_IDS },
  };
}
