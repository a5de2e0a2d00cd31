// Deterministic mutations of a real safetensors header (shapes, offsets, dtypes, the header length,
// the file length, JSON syntax) for the loader's fuzz test. Each mutation says whether every correct
// loader must refuse it (`mustFail`) or may load it (a byte change that leaves valid JSON, a dtype of
// the same width, a header length that only drops padding).
import { open } from 'node:fs/promises';

import { seededRandom } from './seeded-random.js';

export type MutationKind = 'shape' | 'offsets' | 'dtype' | 'length' | 'syntax';

export interface HeaderMutation {
  kind: MutationKind;
  what: string;
  /** The tensor the mutation targets, when there is one: a refusal must name it (or an overlap). */
  tensor?: string;
  mustFail: boolean;
  /** What the refusal must say, when the mutation calls for one particular error. */
  expect?: RegExp;
  /** Header JSON bytes as written after the 8-byte length. */
  header: Buffer;
  /** The 8-byte length prefix; default header.length. */
  declaredLength?: bigint;
  /** Total file size (the data section is zeros); default 8 + header.length + the real data size. */
  fileSize?: number;
}

type Entry = { dtype: unknown; shape: unknown; data_offsets: unknown };
type Header = Record<string, Entry | Record<string, string>>;

const TWO_32 = '4294967296';
// Numbers (as JSON text) no dimension or offset of a real file has; several exceed 2^53 or 2^64.
const BAD_NUMBERS = ['-1', '1.5', '1e3', '2147483648', TWO_32, '1099511627776', '9007199254740993', '9223372036854775807',
  '9223372036854775808', '18446744073709551615', '18446744073709551616', '123456789012345678901234567890', '-9223372036854775808'];
const NOT_NUMBERS = ['"7"', 'null', 'true', '[]', '{}'];
// Shapes whose element count wraps past 2^64 to a small number k (k, shape).
const WRAPPING_SHAPES: Array<[number, string[]]> = [
  [0, [TWO_32, TWO_32]],
  [0, ['65536', '65536', '65536', '65536']],
  [0, ['4611686018427387904', '4']],
  [2, ['3074457345618258603', '6']],
  [1, ['18446744073709551617']],
];
const DTYPE_BYTES: Record<string, number> = { BF16: 2, F16: 2, F32: 4 };

export function headerMutations(headerText: string, dataBytes: number, count: number, seed: number): HeaderMutation[] {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const header = JSON.parse(headerText) as Header;
  const names = Object.keys(header).filter((name) => name !== '__metadata__');
  const jsonLength = Buffer.byteLength(headerText.trimEnd());
  const entry = (name: string) => header[name] as Entry;
  const offsetsOf = (name: string) => entry(name).data_offsets as [number, number];

  /** The header with some values replaced by raw JSON text (numbers JavaScript cannot hold exactly). */
  function withRaw(edit: (copy: Header, raw: (text: string) => string) => void): Buffer {
    const copy = structuredClone(header);
    const texts: string[] = [];
    edit(copy, (text) => `@@raw${texts.push(text) - 1}@@`);
    const json = JSON.stringify(copy).replace(/"@@raw(\d+)@@"/g, (_, i: string) => texts[Number(i)]);
    return Buffer.from(json);
  }

  const makers: Record<MutationKind, () => HeaderMutation> = {
    shape() {
      const name = pick(names);
      const shape = entry(name).shape as number[];
      const choice = Math.floor(random() * 4);
      if (choice === 0) {
        const value = pick([...BAD_NUMBERS, ...NOT_NUMBERS]);
        const at = Math.floor(random() * (shape.length + 1));
        const header = withRaw((h, raw) => {
          const dims: unknown[] = [...shape];
          dims[at] = raw(value);
          (h[name] as Entry).shape = dims;
        });
        return { kind: 'shape', what: `${name} dim ${at} = ${value}`, tensor: name, mustFail: true, header };
      }
      if (choice === 1) {
        const [elements, dims] = pick(WRAPPING_SHAPES);
        const begin = offsetsOf(name)[0];
        const width = DTYPE_BYTES[String(entry(name).dtype)] ?? 2;
        const header = withRaw((h, raw) => {
          (h[name] as Entry).shape = dims.map(raw);
          (h[name] as Entry).data_offsets = [begin, begin + elements * width];
        });
        // Refused for its shape itself, not later for disagreeing with config.json.
        const expect = /more elements than 2\^63|shape entries must be non-negative integers/;
        return { kind: 'shape', what: `${name} shape [${dims}] (wraps to ${elements} elements)`, tensor: name, mustFail: true, expect, header };
      }
      if (choice === 2) {
        const value = pick(['"[2]"', '7', 'null', '{}', '[[1]]']);
        const header = withRaw((h, raw) => ((h[name] as Entry).shape = raw(value)));
        return { kind: 'shape', what: `${name} shape = ${value}`, tensor: name, mustFail: true, header };
      }
      const header = withRaw((h) => delete (h[name] as Partial<Entry>).shape);
      return { kind: 'shape', what: `${name} without shape`, tensor: name, mustFail: true, header };
    },

    offsets() {
      const name = pick(names);
      const [begin, end] = offsetsOf(name);
      const choice = Math.floor(random() * 4);
      if (choice === 0) {
        const side = Math.floor(random() * 2);
        const original = side === 0 ? begin : end;
        const candidates = [...BAD_NUMBERS, '"0"', 'null', '1e20', String(dataBytes), String(dataBytes + 1), String(original + 1), String(original - 1)]
          .filter((value) => value !== String(original));
        const value = pick(candidates);
        const header = withRaw((h, raw) => {
          const offsets: unknown[] = [begin, end];
          offsets[side] = raw(value);
          (h[name] as Entry).data_offsets = offsets;
        });
        return { kind: 'offsets', what: `${name} ${side === 0 ? 'begin' : 'end'} = ${value}`, tensor: name, mustFail: true, header };
      }
      if (choice === 1) {
        const header = withRaw((h) => ((h[name] as Entry).data_offsets = [end, begin]));
        return { kind: 'offsets', what: `${name} offsets swapped`, tensor: name, mustFail: true, header };
      }
      if (choice === 2) {
        const shift = (1 + Math.floor(random() * 4)) * 2 * (random() < 0.5 ? -1 : 1);
        const header = withRaw((h) => ((h[name] as Entry).data_offsets = [begin + shift, end + shift]));
        return { kind: 'offsets', what: `${name} offsets shifted by ${shift}`, tensor: name, mustFail: true, header };
      }
      const value = pick([`[${begin}]`, `[${begin},${end},${end}]`, '[]', `"${begin},${end}"`, 'null']);
      const header = withRaw((h, raw) => ((h[name] as Entry).data_offsets = raw(value)));
      return { kind: 'offsets', what: `${name} data_offsets = ${value}`, tensor: name, mustFail: true, header };
    },

    dtype() {
      const name = pick(names);
      // Same width as BF16: valid in the file; F16 loads, an integer type is refused only if the model reads the tensor.
      const sameWidth = ['F16', 'I16', 'U16'];
      const value = pick([...sameWidth, 'F32', 'F64', 'I64', 'I8', 'U8', 'BOOL', 'F8_E4M3', 'Q4_K', 'bf16', '', 7, null, ['BF16']]);
      const header = withRaw((h) => ((h[name] as Entry).dtype = value));
      return { kind: 'dtype', what: `${name} dtype = ${JSON.stringify(value)}`, tensor: name, mustFail: !sameWidth.includes(value as string), header };
    },

    length() {
      const bytes = Buffer.from(headerText);
      const fileSize = 8 + bytes.length + dataBytes;
      if (random() < 0.3) {
        const size = Math.floor(random() ** 3 * (fileSize - 1)); // biased towards the header's end
        return { kind: 'length', what: `file truncated to ${size} bytes`, mustFail: true, header: bytes, fileSize: size };
      }
      const declared = pick([0n, 1n, 7n, BigInt(jsonLength - 1), BigInt(jsonLength), BigInt(bytes.length - 1), BigInt(bytes.length + 1),
        BigInt(bytes.length + 8), BigInt(fileSize - 8), BigInt(fileSize - 7), BigInt(fileSize), 2n ** 32n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n,
        BigInt(Math.floor(random() * fileSize))]);
      // A length between the end of the JSON and the end of its padding keeps a valid header.
      const mustFail = declared < BigInt(jsonLength) || declared > BigInt(bytes.length);
      return { kind: 'length', what: `header length ${declared} (real ${bytes.length})`, mustFail, header: bytes, declaredLength: declared };
    },

    syntax() {
      const bytes = Buffer.from(headerText);
      const at = Math.floor(random() * jsonLength);
      const choice = Math.floor(random() * 6);
      if (choice === 0) {
        return { kind: 'syntax', what: `byte ${at} deleted`, mustFail: false, header: Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1)]) };
      }
      if (choice === 1 || choice === 2) {
        const char = pick(['{', '}', '[', ']', '"', ',', ':', '-', '.', '0', '9', 'e', '\\', 't', 'n', '\u007f', '\u00e9']);
        const replace = choice === 2 ? 1 : 0;
        const header = Buffer.concat([bytes.subarray(0, at), Buffer.from(char), bytes.subarray(at + replace)]);
        return { kind: 'syntax', what: `${JSON.stringify(char)} ${replace ? 'replaces' : 'inserted at'} byte ${at}`, mustFail: false, header };
      }
      if (choice === 3) {
        const header = Buffer.concat([bytes.subarray(0, at), Buffer.from([0]), bytes.subarray(at)]);
        return { kind: 'syntax', what: `NUL inserted at byte ${at}`, mustFail: true, header };
      }
      if (choice === 4) {
        return { kind: 'syntax', what: `JSON cut at byte ${at}`, mustFail: true, header: bytes.subarray(0, at) };
      }
      const depth = pick([65, 1000, 100000]);
      const name = pick(names);
      const header = withRaw((h, raw) => ((h[name] as Entry).shape = raw('['.repeat(depth) + ']'.repeat(depth))));
      return { kind: 'syntax', what: `${name} shape nested ${depth} deep`, mustFail: true, header };
    },
  };

  const kinds = Object.keys(makers) as MutationKind[];
  return Array.from({ length: count }, (_, i) => makers[kinds[i % kinds.length]]());
}

/** Writes `mutation` as the safetensors file `target`: sparse zeros stand for the tensor data. */
export async function writeMutatedFile(target: string, mutation: HeaderMutation, dataBytes: number): Promise<void> {
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(mutation.declaredLength ?? BigInt(mutation.header.length));
  const handle = await open(target, 'w');
  try {
    await handle.write(Buffer.concat([prefix, mutation.header]), 0, 8 + mutation.header.length, 0);
    await handle.truncate(mutation.fileSize ?? 8 + mutation.header.length + dataBytes);
  } finally {
    await handle.close();
  }
}
