// The words every layer shares for what is read and how: the model variants, the OCR tasks and the
// vision modes, and which tasks and modes each variant was released with (docs/model.md §4.3, §6).
// The engine gives them meaning (prompts.ts, image-tokens.ts); the queue, the jobs, the producer, the
// API and the CLI name and check them.

export const VARIANTS = ['v1', 'v2', 'v3'] as const;
export type Variant = (typeof VARIANTS)[number];

/**
 * ocr: plain text (V1/V2). markdown: layout-grounded markdown (V1/V2). parse: one page (V3).
 * parse-multi: several pages behind a single `<image>` (V3). V3 documents only its two prompts (§6.2).
 */
export const OCR_TASKS = ['ocr', 'markdown', 'parse', 'parse-multi'] as const;
export type OcrTask = (typeof OCR_TASKS)[number];

/**
 * V1/V3: tiny, small, base, large (one padded view, no tiles) and gundam (1024 global view + 640 tiles).
 * V2 has a single mode, global 1024 + 0–6 tiles of 768, named gundam here as well.
 */
export const VISION_MODES = ['tiny', 'small', 'base', 'large', 'gundam'] as const;
export type VisionMode = (typeof VISION_MODES)[number];

const VARIANT_TASKS: Record<Variant, readonly OcrTask[]> = {
  v1: ['ocr', 'markdown'],
  v2: ['ocr', 'markdown'],
  v3: ['parse', 'parse-multi'],
};

const VARIANT_MODES: Record<Variant, readonly VisionMode[]> = {
  v1: VISION_MODES,
  v2: ['gundam'],
  v3: VISION_MODES,
};

/** The tasks `variant` has an official prompt for. */
export function tasksOf(variant: Variant): readonly OcrTask[] {
  return VARIANT_TASKS[variant];
}

/** The vision modes `variant` reads images in. */
export function modesOf(variant: Variant): readonly VisionMode[] {
  return VARIANT_MODES[variant];
}
