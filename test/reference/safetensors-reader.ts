// Minimal safetensors reader for the reference decoder: whole files are read into memory (fine for tiny
// checkpoints) and every tensor is converted exactly to float32.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A tensor converted to float32: data[product(shape)], row-major. */
export interface Float32Tensor {
  shape: number[];
  data: Float32Array;
}

interface HeaderEntry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

interface SafetensorsFile {
  header: Record<string, HeaderEntry>;
  data: Buffer; // the data section; data_offsets are relative to it
}

/** Tensors of a Hugging Face checkpoint directory: model.safetensors.index.json + shards, or a single model.safetensors. */
export class SafetensorsCheckpoint {
  private readonly files = new Map<string, SafetensorsFile>();

  private constructor(
    private readonly dir: string,
    private readonly weightMap: Record<string, string>,
  ) {}

  static open(dir: string): SafetensorsCheckpoint {
    const indexPath = join(dir, 'model.safetensors.index.json');
    if (existsSync(indexPath)) {
      const index = JSON.parse(readFileSync(indexPath, 'utf8')) as { weight_map: Record<string, string> };
      return new SafetensorsCheckpoint(dir, index.weight_map);
    }
    const single = 'model.safetensors';
    if (!existsSync(join(dir, single))) {
      throw new Error(`${dir}: neither model.safetensors.index.json nor model.safetensors exists`);
    }
    const checkpoint = new SafetensorsCheckpoint(dir, {});
    for (const name of Object.keys(checkpoint.file(single).header)) checkpoint.weightMap[name] = single;
    return checkpoint;
  }

  /** Names of all tensors in the checkpoint. */
  names(): string[] {
    return Object.keys(this.weightMap);
  }

  /** The tensor `name` as float32 (BF16, F16 and F32 convert exactly). */
  tensor(name: string): Float32Tensor {
    const fileName = this.weightMap[name];
    if (fileName === undefined) throw new Error(`${this.dir}: no tensor named ${name}`);
    const file = this.file(fileName);
    const entry = file.header[name];
    if (entry === undefined) throw new Error(`${fileName}: the index maps ${name} here but the header lacks it`);
    const count = entry.shape.reduce((a, b) => a * b, 1);
    const [begin, end] = entry.data_offsets;
    const bytes = file.data.subarray(begin, end);
    const width = { F32: 4, F16: 2, BF16: 2 }[entry.dtype];
    if (width === undefined) throw new Error(`${name}: unsupported dtype ${entry.dtype} (BF16, F16, F32 only)`);
    if (bytes.length !== count * width || end > file.data.length) {
      throw new Error(`${name}: data_offsets [${begin}, ${end}] do not hold ${count} ${entry.dtype} values`);
    }
    return { shape: entry.shape, data: decode(entry.dtype, bytes, count) };
  }

  private file(fileName: string): SafetensorsFile {
    let file = this.files.get(fileName);
    if (file === undefined) {
      file = parseSafetensors(readFileSync(join(this.dir, fileName)), fileName);
      this.files.set(fileName, file);
    }
    return file;
  }
}

/** Splits a safetensors file: 8-byte LE header length, JSON header, data section. */
function parseSafetensors(buffer: Buffer, fileName: string): SafetensorsFile {
  const headerLength = Number(buffer.readBigUInt64LE(0));
  if (8 + headerLength > buffer.length) throw new Error(`${fileName}: header length ${headerLength} exceeds the file`);
  const header = JSON.parse(buffer.toString('utf8', 8, 8 + headerLength)) as Record<string, HeaderEntry>;
  delete header['__metadata__'];
  return { header, data: buffer.subarray(8 + headerLength) };
}

/** Little-endian BF16/F16/F32 bytes[count·width] → float32[count], exact. */
function decode(dtype: string, bytes: Buffer, count: number): Float32Array {
  const out = new Float32Array(count);
  if (dtype === 'F32') {
    for (let i = 0; i < count; i++) out[i] = bytes.readFloatLE(4 * i);
  } else if (dtype === 'BF16') {
    const bits = new Uint32Array(out.buffer); // bf16 is the upper half of a float32
    for (let i = 0; i < count; i++) bits[i] = (bytes[2 * i] | (bytes[2 * i + 1] << 8)) << 16;
  } else {
    for (let i = 0; i < count; i++) out[i] = halfToNumber(bytes[2 * i] | (bytes[2 * i + 1] << 8));
  }
  return out;
}

/** IEEE 754 binary16 bits → its value (subnormals, infinities and NaN included). */
export function halfToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 31) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}
