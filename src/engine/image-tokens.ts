// Resolution modes and the number K of `<image>` ids (128815) one image expands to in the prompt
// (docs/model.md §4.3, §6.3). K counts every vector that replaces those ids: view tokens, the `image_newline`
// after each row (V1/V3) and the one `view_seperator`.
import { modesOf, type Variant, type VisionMode } from '../vocabulary/ocr-vocabulary.js';

export interface ModeGeometry {
  /** Side of the global view in crop mode (`base_size`). */
  baseSize: number;
  /** Side of the single view in non-crop modes, of each tile in crop mode (`image_size`). */
  imageSize: number;
  /** Crop mode: a global view plus tiles when the image exceeds imageSize in either dimension. */
  crop: boolean;
}

const SINGLE_VIEW_MODES: Record<Exclude<VisionMode, 'gundam'>, ModeGeometry> = {
  tiny: { baseSize: 512, imageSize: 512, crop: false },
  small: { baseSize: 640, imageSize: 640, crop: false },
  base: { baseSize: 1024, imageSize: 1024, crop: false },
  large: { baseSize: 1280, imageSize: 1280, crop: false },
};

export function modeGeometry(variant: Variant, mode: VisionMode): ModeGeometry {
  if (!modesOf(variant).includes(mode)) {
    throw new RangeError(`${variant} has no vision mode ${JSON.stringify(mode)}; use one of ${modesOf(variant).join(', ')}`);
  }
  if (mode === 'gundam') return { baseSize: 1024, imageSize: variant === 'v2' ? 768 : 640, crop: true };
  return SINGLE_VIEW_MODES[mode];
}

/** Encoder output side per view: ceil((side / 16 patch) / 4 downsampling) — 8, 10, 12, 16, 20. */
function queriesPerSide(side: number): number {
  return Math.ceil(Math.floor(side / 16) / 4);
}

/**
 * K for one image in `mode` with tile grid [columns, rows] ([1, 1]: no tiles).
 * V1/V3 crop: G·(G+1) + 1, plus (j·T)·(i·T + 1) with tiles; non-crop: T·(T+1) + 1.
 * V2 crop: G² + 1, plus (T·i)·(T·j) with tiles (257 + 144·n).
 * G: queries per side of the base_size view, T: of an image_size view.
 */
export function imageTokenCount(variant: Variant, mode: VisionMode, grid: readonly [number, number]): number {
  const { baseSize, imageSize, crop } = modeGeometry(variant, mode);
  const [columns, rows] = grid;
  if (!crop && (columns !== 1 || rows !== 1)) throw new RangeError(`${mode} mode has no tiles, got grid ${columns}×${rows}`);
  const hasTiles = columns * rows > 1;
  const g = queriesPerSide(baseSize);
  const t = queriesPerSide(imageSize);
  if (variant === 'v2') {
    return g * g + 1 + (hasTiles ? t * columns * (t * rows) : 0);
  }
  if (!crop) return t * (t + 1) + 1;
  return g * (g + 1) + 1 + (hasTiles ? rows * t * (columns * t + 1) : 0);
}
