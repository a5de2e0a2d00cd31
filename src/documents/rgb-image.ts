// The decoded page image every document yields and the engine's preprocessing takes.

/** An 8-bit RGB image: `data` is [height, width, 3], row-major, channels R, G, B. */
export interface RgbImage {
  width: number;
  height: number;
  data: Uint8Array;
}
