// Page image -> the pixel tensors the vision encoder reads, as the official Hugging Face `infer` paths build them
// (docs/model.md §4): EXIF orientation and RGB, a gray-padded square global view, optional tiles cut from a
// stretched copy of the page, then x = p/255 normalised to [-1, 1] and cast to bfloat16. Every resize is
// Pillow's bicubic, reproduced exactly by pillow-resize.ts.
import type { Variant, VisionMode } from '../vocabulary/ocr-vocabulary.js';
import { imageTokenCount, modeGeometry } from './image-tokens.js';
import type { RgbImage } from '../documents/rgb-image.js';
import { pillowResizeBicubic } from './pillow-resize.js';
import { chooseTileGrid, type MaxTiles, type TileGrid } from './tile-grid.js';


/** Pad colour: tuple(int(0.5 * 255)) for each channel. */
const PAD_GRAY = 127;

/** Python's round() on a float: halves go to the even neighbour. */
export function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const fraction = x - floor;
  if (fraction !== 0.5) return fraction < 0.5 ? floor : floor + 1;
  return floor % 2 === 0 ? floor : floor + 1;
}

/**
 * Pillow's `ImageOps.pad(image, (side, side), BICUBIC, (127, 127, 127))`: the image scaled (up or down) so its
 * longer side is `side` and the shorter round(short / long × side), then centred on a gray square at offset
 * round((side − length) × 0.5). Where Pillow would fail on a shorter side rounding to 0 it is 1 pixel here.
 */
export function padToSquare(image: RgbImage, side: number): RgbImage {
  let width = side;
  let height = side;
  if (image.width !== image.height) {
    if (image.width > image.height) height = Math.max(1, roundHalfEven((image.height / image.width) * side));
    else width = Math.max(1, roundHalfEven((image.width / image.height) * side));
  }
  const resized = pillowResizeBicubic(image, width, height);
  if (width === side && height === side) return resized;
  const canvas = new Uint8Array(side * side * 3).fill(PAD_GRAY);
  const left = width === side ? 0 : roundHalfEven((side - width) * 0.5);
  const top = height === side ? 0 : roundHalfEven((side - height) * 0.5);
  for (let y = 0; y < height; y++) {
    canvas.set(resized.data.subarray(y * width * 3, (y + 1) * width * 3), ((top + y) * side + left) * 3);
  }
  return { width: side, height: side, data: canvas };
}

/** The image cut into a tile grid: tiles in row-major order, each tileSide × tileSide. */
export interface ImageTiles {
  grid: TileGrid;
  tiles: RgbImage[];
}

/**
 * The official `dynamic_preprocess` (min 2 tiles, no thumbnail): picks the grid (§4.2), stretches the image to
 * (tileSide·columns) × (tileSide·rows) and cuts it row by row.
 */
export function dynamicTiles(image: RgbImage, tileSide: number, maxTiles: MaxTiles): ImageTiles {
  const grid = chooseTileGrid(image.width, image.height, tileSide, maxTiles);
  const [columns, rows] = grid;
  const stretched = pillowResizeBicubic(image, tileSide * columns, tileSide * rows);
  const rowBytes = tileSide * 3;
  const tiles: RgbImage[] = [];
  for (let k = 0; k < columns * rows; k++) {
    const left = (k % columns) * tileSide;
    const top = Math.floor(k / columns) * tileSide;
    const data = new Uint8Array(tileSide * rowBytes);
    for (let y = 0; y < tileSide; y++) {
      const start = ((top + y) * stretched.width + left) * 3;
      data.set(stretched.data.subarray(start, start + rowBytes), y * rowBytes);
    }
    tiles.push({ width: tileSide, height: tileSide, data });
  }
  return { grid, tiles };
}

export interface PreprocessOptions {
  /**
   * Tile limit in crop mode. Defaults: V1 9 (Hugging Face `infer`; the official vLLM scripts and upstream vLLM
   * use 6), V2 6, V3 32.
   */
  maxTiles?: MaxTiles;
  /** Round the normalised pixels to bfloat16 (nearest-even), as the official code casts them. Default true. */
  roundToBf16?: boolean;
}

export const DEFAULT_MAX_TILES: Record<Variant, MaxTiles> = { v1: 9, v2: 6, v3: 32 };

/** Encoder input for one page image. Pixel values are x = p/255 normalised to [-1, 1], planar RGB. */
export interface PreprocessedPage {
  /** [3, globalSide, globalSide]: the padded (or, for small non-crop modes, stretched) whole page. */
  global: Float32Array;
  globalSide: number;
  /** [n, 3, tileSide, tileSide], n = columns·rows, row-major tile order; absent without tiles. */
  tiles?: Float32Array;
  /** The mode's image_size: the side of each tile. */
  tileSide: number;
  /** [columns, rows]; [1, 1] without tiles. */
  grid: TileGrid;
  /** K: the number of `<image>` ids this page expands to (§6.3). */
  imageTokens: number;
}

/**
 * The tile grid the page gets in `mode`: [1, 1] in non-crop modes and for pages that fit in one tile
 * (width and height ≤ image_size, the official hard-coded 640 / 768), else the dynamic grid.
 */
export function pageTileGrid(width: number, height: number, variant: Variant, mode: VisionMode, maxTiles?: MaxTiles): TileGrid {
  const { imageSize, crop } = modeGeometry(variant, mode);
  if (!crop || (width <= imageSize && height <= imageSize)) return [1, 1];
  return chooseTileGrid(width, height, imageSize, maxTiles ?? DEFAULT_MAX_TILES[variant]);
}

/**
 * One page as the official `infer` prepares it. Crop mode: global view = image padded to base_size, tiles
 * when the page exceeds one tile. Non-crop: image_size ≤ 640 stretches to image_size² (aspect lost, as the
 * official code does), larger sizes pad to image_size².
 */
export function preprocessPage(image: RgbImage, variant: Variant, mode: VisionMode, options: PreprocessOptions = {}): PreprocessedPage {
  const { baseSize, imageSize, crop } = modeGeometry(variant, mode);
  const values = normalisedValues(options.roundToBf16 ?? true);
  if (!crop) {
    const view = imageSize <= 640 ? pillowResizeBicubic(image, imageSize, imageSize) : padToSquare(image, imageSize);
    return {
      global: toPlanar([view], values),
      globalSide: imageSize,
      tileSide: imageSize,
      grid: [1, 1],
      imageTokens: imageTokenCount(variant, mode, [1, 1]),
    };
  }
  const grid = pageTileGrid(image.width, image.height, variant, mode, options.maxTiles);
  const tiles = grid[0] * grid[1] > 1 ? dynamicTiles(image, imageSize, options.maxTiles ?? DEFAULT_MAX_TILES[variant]) : undefined;
  return {
    global: toPlanar([padToSquare(image, baseSize)], values),
    globalSide: baseSize,
    tiles: tiles && toPlanar(tiles.tiles, values),
    tileSide: imageSize,
    grid,
    imageTokens: imageTokenCount(variant, mode, grid),
  };
}

/** Same-sized views [n] of [h, w, 3] -> [n, 3, h, w] through the per-byte value table. */
function toPlanar(views: RgbImage[], values: Float32Array): Float32Array {
  const plane = views[0].width * views[0].height;
  const out = new Float32Array(views.length * 3 * plane);
  views.forEach((view, n) => {
    const base = n * 3 * plane;
    for (let p = 0; p < plane; p++) {
      out[base + p] = values[view.data[p * 3]];
      out[base + plane + p] = values[view.data[p * 3 + 1]];
      out[base + 2 * plane + p] = values[view.data[p * 3 + 2]];
    }
  });
  return out;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** A float32 rounded to the nearest bfloat16 (ties to even). */
export function roundToBf16(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  u32[0] = (bits + 0x7fff + ((bits >>> 16) & 1)) & 0xffff0000;
  return f32[0];
}

/**
 * Byte p -> model input, in float32 as torchvision computes it: ToTensor p/255, then Normalize (x − 0.5) / 0.5;
 * optionally cast to bfloat16. Equals p/127.5 − 1 up to float32 rounding.
 */
function normalisedValues(bf16: boolean): Float32Array {
  return Float32Array.from({ length: 256 }, (_, p) => {
    const x = Math.fround(Math.fround(Math.fround(p / 255) - 0.5) / 0.5);
    return bf16 ? roundToBf16(x) : x;
  });
}
