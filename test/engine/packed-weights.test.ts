// The node's shared packed weights (SCRIPTORIUM_PACKED_WEIGHTS_DIR, docs/engine.md): the first load
// writes one file, later loads (here and in another process) map it instead of packing again, and
// a decoder on the mapped file computes bitwise the logits of one that packed into its own memory.
// On kernel sets that read the checkpoint as stored, nothing is written.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import { generate } from '../../src/engine/generate.js';
import { NativeModel, PACKED_WEIGHTS_DIR_VARIABLE } from '../../src/engine/native-model.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const PROMPT = [0, 42, 4242, 424, 2, 9000, 77];
/** The only kernel set that multiplies packed weights (the others read the checkpoint's rows). */
const PACKING_KERNELS = 'avx512bf16';

async function prefillLogits(model: NativeModel): Promise<Float32Array> {
  const [result] = await generate(model, [{ promptIds: PROMPT, maxNewTokens: 4, stopAtEos: false, keepPrefillLogits: true }]);
  return result.prefillLogits!;
}

describe('shared packed weights', () => {
  let checkpoint: string;
  let folder: string;

  before(async () => {
    checkpoint = await tinyCheckpoint('v1');
    folder = await mkdtemp(path.join(tmpdir(), 'scriptorium-packed-'));
  });
  after(() => rm(folder, { recursive: true, force: true }));

  test('one file per checkpoint, reused by later loads, with the logits of private packing', async () => {
    const dir = path.join(folder, 'node-cache');
    const own = await NativeModel.load(checkpoint);
    const first = await NativeModel.load(checkpoint, { packedWeightsDir: dir });
    const files = await readdir(dir).catch(() => []);
    if (own.kernels !== PACKING_KERNELS) {
      assert.deepEqual(files, [], `${own.kernels} packs nothing, so it writes nothing`);
      return;
    }
    const packed = files.filter((name) => name.endsWith('.bin'));
    assert.equal(packed.length, 1, `one packed file, found ${files.join(', ')}`);
    assert.ok(!files.some((name) => name.endsWith('.partial')), 'no partial file is left');
    const file = path.join(dir, packed[0]);
    const written = await stat(file);

    const second = await NativeModel.load(checkpoint, { packedWeightsDir: dir });
    const reused = await stat(file);
    assert.equal(reused.ino, written.ino, 'the second load mapped the file instead of writing a new one');
    assert.equal(reused.mtimeMs, written.mtimeMs);

    const expected = await prefillLogits(own);
    assert.deepEqual(await prefillLogits(first), expected, 'the process that wrote the file');
    assert.deepEqual(await prefillLogits(second), expected, 'a load that mapped it');
  });

  test('another process finds the file through the environment variable and maps it', async (t) => {
    const probe = await NativeModel.load(checkpoint);
    if (probe.kernels !== PACKING_KERNELS) return t.skip(`${probe.kernels} packs nothing`);
    const dir = path.join(folder, 'by-variable');
    await NativeModel.load(checkpoint, { packedWeightsDir: dir });
    const name = (await readdir(dir)).find((entry) => entry.endsWith('.bin'))!;
    const before = await stat(path.join(dir, name));
    const script = `
      const { NativeModel } = await import(${JSON.stringify(new URL('../../src/engine/native-model.js', import.meta.url).href)});
      const model = await NativeModel.load(${JSON.stringify(checkpoint)});
      process.stdout.write(model.kernels);`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, [PACKED_WEIGHTS_DIR_VARIABLE]: dir },
    });
    assert.equal(stdout, PACKING_KERNELS);
    const afterwards = await stat(path.join(dir, name));
    assert.equal(afterwards.ino, before.ino, 'the child mapped the existing file');
    assert.deepEqual((await readdir(dir)).sort(), [name, `${name}.lock`], 'nothing else was written');
  });
});
