// Damaged or inconsistent copies of the tiny V1 checkpoint, each with the error that names its
// problem: loading must fail with it, and `model check` must report it.
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, open, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface DamagedCheckpoint {
  /** What is wrong, as a test name. */
  damage: string;
  make(): Promise<string>;
  /** What the loader's error and one of `model check`'s problems say. */
  error: RegExp;
}

function safetensors(header: object | string, dataBytes: number): Buffer {
  const json = Buffer.from(typeof header === 'string' ? header : JSON.stringify(header));
  const out = Buffer.alloc(8 + json.length + dataBytes);
  out.writeBigUInt64LE(BigInt(json.length), 0);
  json.copy(out, 8);
  return out;
}

/** Builds the damaged copies of `tinyDir` in temporary folders; `cleanup` removes them. */
export function damagedCheckpoints(tinyDir: string, tinyShard: string): { cases: DamagedCheckpoint[]; cleanup(): Promise<void> } {
  const made: string[] = [];
  const tempDir = async (prefix: string) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
  /** The tiny config.json and `bytes` as the single model.safetensors. */
  const modelWithFile = async (bytes: Buffer) => {
    const dir = await tempDir('scriptorium-bad-');
    await copyFile(path.join(tinyDir, 'config.json'), path.join(dir, 'config.json'));
    await writeFile(path.join(dir, 'model.safetensors'), bytes);
    return dir;
  };
  /** The tiny checkpoint (shard and tokenizer linked) with an edited config or index. */
  const editedCopy = async (edit: { config?: (c: any) => void; index?: (i: any) => void }) => {
    const dir = await tempDir('scriptorium-edit-');
    const config = JSON.parse(await readFile(path.join(tinyDir, 'config.json'), 'utf8'));
    const index = JSON.parse(await readFile(path.join(tinyDir, 'model.safetensors.index.json'), 'utf8'));
    edit.config?.(config);
    edit.index?.(index);
    await writeFile(path.join(dir, 'config.json'), JSON.stringify(config));
    await writeFile(path.join(dir, 'model.safetensors.index.json'), JSON.stringify(index));
    await symlink(tinyShard, path.join(dir, path.basename(tinyShard)));
    await symlink(path.join(tinyDir, 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
    return dir;
  };
  /** A copy whose shard header gives tensor `name` another dtype of the same width. */
  const withRelabelledDtype = async (name: string, dtype: string) => {
    const dir = await editedCopy({});
    const shard = path.join(dir, path.basename(tinyShard));
    await rm(shard);
    await copyFile(tinyShard, shard);
    const head = await readFile(tinyShard).then((b) => b.subarray(0, 8 + Number(b.readBigUInt64LE(0))));
    const header = JSON.parse(head.subarray(8).toString('utf8'));
    header[name].dtype = dtype;
    const json = Buffer.from(JSON.stringify(header).padEnd(head.length - 8, ' '));
    assert.equal(json.length, head.length - 8);
    const handle = await open(shard, 'r+');
    await handle.write(json, 0, json.length, 8);
    await handle.close();
    return dir;
  };

  const cases: DamagedCheckpoint[] = [
    { damage: 'a file shorter than its 8-byte header length', make: () => modelWithFile(Buffer.from([1, 2, 3])), error: /truncated/ },
    {
      damage: 'a truncated shard',
      make: async () => modelWithFile((await readFile(tinyShard)).subarray(0, 70_000_000)),
      error: /tensor \S+: data_offsets \[\d+, \d+\] run past the end of the data section/,
    },
    {
      damage: 'a header length past the end of the file',
      make: () => {
        const bytes = Buffer.alloc(64);
        bytes.writeBigUInt64LE(1000n, 0);
        return modelWithFile(bytes);
      },
      error: /header length 1000 runs past the end/,
    },
    { damage: 'a header that is not JSON', make: () => modelWithFile(safetensors('{"a": [1, 2', 0)), error: /header is not valid JSON/ },
    {
      damage: 'overlapping tensor data',
      make: () => modelWithFile(safetensors({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } }, 16)),
      error: /tensor data ranges overlap at byte 4/,
    },
    {
      damage: 'offsets that disagree with the shape',
      make: () => modelWithFile(safetensors({ a: { dtype: 'BF16', shape: [3], data_offsets: [0, 8] } }, 8)),
      error: /tensor a: byte range of 8 bytes does not match shape \[3\] of BF16 \(6 bytes\)/,
    },
    {
      damage: 'an unknown dtype',
      make: () => modelWithFile(safetensors({ a: { dtype: 'Q4_K', shape: [2], data_offsets: [0, 2] } }, 2)),
      error: /tensor a: unsupported dtype Q4_K/,
    },
    {
      // [2^32, 2^32] wraps to 0 elements in 64 bits, which an empty byte range would match.
      damage: 'a shape whose element count wraps past 2^64, on a tensor the model does not read',
      make: () => modelWithFile(safetensors('{"evil": {"dtype": "BF16", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}}', 0)),
      error: /tensor evil: shape \[4294967296,4294967296\]\.\.\. has more elements than 2\^63/,
    },
    {
      damage: 'a tensor whose shape disagrees with config.json',
      make: () => editedCopy({ config: (c) => (c.intermediate_size += 16) }),
      error: /tensor model\.layers\.0\.mlp\.gate_proj\.weight has shape \[\d+,\d+\] but config\.json implies \[\d+,\d+\]/,
    },
    {
      damage: 'a tensor missing from the checkpoint',
      make: () => editedCopy({ index: (i) => delete i.weight_map['model.norm.weight'] }),
      error: /missing tensor model\.norm\.weight/,
    },
    {
      damage: 'a shard named in the index but absent',
      make: () => editedCopy({ index: (i) => (i.weight_map['model.norm.weight'] = 'model-00002-of-000002.safetensors') }),
      error: /shard model-00002-of-000002\.safetensors named in the index is missing/,
    },
    {
      damage: 'an index that is not JSON',
      make: async () => {
        const dir = await editedCopy({});
        await writeFile(path.join(dir, 'model.safetensors.index.json'), '{"weight_map": {"a": ');
        return dir;
      },
      error: /model\.safetensors\.index\.json: not valid JSON/,
    },
    {
      damage: 'an index without a weight map',
      make: () => editedCopy({ index: (i) => (i.weight_map = ['model-00001-of-000001.safetensors']) }),
      error: /model\.safetensors\.index\.json: missing weight_map object/,
    },
    {
      damage: 'an index entry that points outside the folder',
      make: () => editedCopy({ index: (i) => (i.weight_map['model.norm.weight'] = '../model-00001-of-000001.safetensors') }),
      error: /weight_map entry for model\.norm\.weight is not a plain file name/,
    },
    {
      damage: 'a weight stored as integers',
      make: () => withRelabelledDtype('model.norm.weight', 'I16'),
      error: /tensor model\.norm\.weight has dtype I16; a weight must be BF16, F16 or F32/,
    },
    {
      damage: 'a config.json that is not JSON',
      make: async () => {
        const dir = await tempDir('scriptorium-config-');
        await writeFile(path.join(dir, 'config.json'), '{"hidden_size": ');
        return dir;
      },
      error: /config\.json is not valid JSON/,
    },
  ];
  return { cases, cleanup: () => Promise.all(made.map((dir) => rm(dir, { recursive: true, force: true }))).then(() => undefined) };
}
