// Damaged or inconsistent checkpoints fail to load with an error that names the problem; the
// process never crashes. Each case writes a small directory with the tiny V1 config.json.
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, open, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { NativeModel } from '../src/engine/native-model.js';
import { tinyCheckpoint } from './support/tiny-checkpoints.js';

let tinyDir: string;
let tinyShard: string;
const madeDirs: string[] = [];

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  madeDirs.push(dir);
  return dir;
}

function safetensors(header: object | string, dataBytes: number): Buffer {
  const json = Buffer.from(typeof header === 'string' ? header : JSON.stringify(header));
  const out = Buffer.alloc(8 + json.length + dataBytes);
  out.writeBigUInt64LE(BigInt(json.length), 0);
  json.copy(out, 8);
  return out;
}

/** A directory with the tiny config.json and `bytes` as its single model.safetensors. */
async function modelWithFile(bytes: Buffer): Promise<string> {
  const dir = await tempDir('scriptorium-bad-');
  await copyFile(path.join(tinyDir, 'config.json'), path.join(dir, 'config.json'));
  await writeFile(path.join(dir, 'model.safetensors'), bytes);
  return dir;
}

/** A copy of the tiny checkpoint (shard linked, not copied) with edited config or index. */
async function editedCopy(edit: { config?: (c: any) => void; index?: (i: any) => void }): Promise<string> {
  const dir = await tempDir('scriptorium-edit-');
  const config = JSON.parse(await readFile(path.join(tinyDir, 'config.json'), 'utf8'));
  const index = JSON.parse(await readFile(path.join(tinyDir, 'model.safetensors.index.json'), 'utf8'));
  edit.config?.(config);
  edit.index?.(index);
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(config));
  await writeFile(path.join(dir, 'model.safetensors.index.json'), JSON.stringify(index));
  await symlink(tinyShard, path.join(dir, path.basename(tinyShard)));
  return dir;
}

/** A copy of the tiny checkpoint whose shard header gives tensor `name` another dtype of the same width. */
async function withRelabelledDtype(name: string, dtype: string): Promise<string> {
  const dir = await editedCopy({});
  const shard = path.join(dir, path.basename(tinyShard));
  await rm(shard);
  await copyFile(tinyShard, shard);
  const bytes = await readFile(tinyShard, { encoding: null }).then((b) => b.subarray(0, 8 + Number(b.readBigUInt64LE(0))));
  const header = JSON.parse(bytes.subarray(8).toString('utf8'));
  header[name].dtype = dtype;
  const json = Buffer.from(JSON.stringify(header).padEnd(bytes.length - 8, ' '));
  assert.equal(json.length, bytes.length - 8);
  const handle = await open(shard, 'r+');
  await handle.write(json, 0, json.length, 8);
  await handle.close();
  return dir;
}

describe('loading a damaged checkpoint', () => {
  before(async () => {
    tinyDir = await tinyCheckpoint('v1');
    const index = JSON.parse(await readFile(path.join(tinyDir, 'model.safetensors.index.json'), 'utf8'));
    tinyShard = path.join(tinyDir, Object.values(index.weight_map as Record<string, string>)[0]);
  });

  after(async () => {
    await Promise.all(madeDirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  test('a file shorter than its 8-byte header length is reported as truncated', async () => {
    await assert.rejects(NativeModel.load(await modelWithFile(Buffer.from([1, 2, 3]))), /truncated/);
  });

  test('a truncated shard is reported with the tensor whose data runs past the end', async () => {
    const whole = await readFile(tinyShard);
    const dir = await modelWithFile(whole.subarray(0, Math.floor(whole.length / 2)));
    await assert.rejects(NativeModel.load(dir), /tensor .* run past the end of the data section/);
  });

  test('a header length past the end of the file is rejected', async () => {
    const bytes = Buffer.alloc(64);
    bytes.writeBigUInt64LE(1000n, 0);
    await assert.rejects(NativeModel.load(await modelWithFile(bytes)), /header length 1000 runs past the end/);
  });

  test('a header that is not JSON is rejected', async () => {
    await assert.rejects(NativeModel.load(await modelWithFile(safetensors('{"a": [1, 2', 0))), /not valid JSON/);
  });

  test('overlapping tensor data is rejected', async () => {
    const header = {
      a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
      b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
    };
    await assert.rejects(NativeModel.load(await modelWithFile(safetensors(header, 16))), /overlap/);
  });

  test('offsets that disagree with the shape are rejected', async () => {
    const header = { a: { dtype: 'BF16', shape: [3], data_offsets: [0, 8] } };
    await assert.rejects(NativeModel.load(await modelWithFile(safetensors(header, 8))), /does not match shape \[3\]/);
  });

  test('a shape whose element count wraps past 2^64 is refused, even on a tensor the model does not read', async () => {
    // [2^32, 2^32] wraps to 0 elements in 64 bits, which an empty byte range would match.
    const header = '{"evil": {"dtype": "BF16", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}}';
    await assert.rejects(NativeModel.load(await modelWithFile(safetensors(header, 0))), /tensor evil: shape \[4294967296,4294967296\]\.\.\. has more elements than 2\^63/);
  });

  test('a weight stored as integers is refused by name', async () => {
    const dir = await withRelabelledDtype('model.norm.weight', 'I16');
    await assert.rejects(NativeModel.load(dir), /tensor model\.norm\.weight has dtype I16; a weight must be BF16, F16 or F32/);
  });

  test('an unknown dtype is rejected by name', async () => {
    const header = { a: { dtype: 'Q4_K', shape: [2], data_offsets: [0, 2] } };
    await assert.rejects(NativeModel.load(await modelWithFile(safetensors(header, 2))), /unsupported dtype Q4_K/);
  });

  test('a tensor whose shape disagrees with config.json is named with both shapes', async () => {
    const dir = await editedCopy({ config: (c) => (c.intermediate_size += 16) });
    await assert.rejects(
      NativeModel.load(dir),
      /model\.layers\.0\.mlp\.gate_proj\.weight has shape \[\d+,\d+\] but config\.json implies \[\d+,\d+\]/,
    );
  });

  test('a tensor missing from the checkpoint is named', async () => {
    const dir = await editedCopy({ index: (i) => delete i.weight_map['model.norm.weight'] });
    await assert.rejects(NativeModel.load(dir), /missing tensor model\.norm\.weight/);
  });

  test('a shard named in the index but absent is reported', async () => {
    const dir = await editedCopy({ index: (i) => (i.weight_map['model.norm.weight'] = 'model-00002-of-000002.safetensors') });
    await assert.rejects(NativeModel.load(dir), /shard model-00002-of-000002\.safetensors named in the index is missing/);
  });

  test('a config.json that is not JSON is reported', async () => {
    const dir = await tempDir('scriptorium-config-');
    await writeFile(path.join(dir, 'config.json'), '{"hidden_size": ');
    await assert.rejects(NativeModel.load(dir), /config\.json is not valid JSON/);
  });
});
