// Which checkpoint a command runs: a folder `model synth` wrote is flagged synthetic wherever it is
// named from, and a folder that holds no checkpoint says how to get one.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import { resolveModelDir } from '../../src/model/model-resolve.js';
import { SYNTHETIC_MARKER_FILE } from '../../src/model/synth/synthetic-marker.js';
import { makePng } from '../support/make-documents.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const run = promisify(execFile);
const cli = path.resolve('dist/src/cli/main.js');
let work: string;

before(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-resolve-'));
});

after(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('resolving --model', () => {
  test('a checkpoint written by model synth carries the synthetic marker and is flagged synthetic', async () => {
    const dir = await tinyCheckpoint('v1');
    assert.ok((await readdir(dir)).includes(SYNTHETIC_MARKER_FILE));
    assert.deepEqual(await resolveModelDir(dir), { dir, synthetic: true });
  });

  test('the same files without the marker are not synthetic', async () => {
    const source = await tinyCheckpoint('v1');
    const copy = path.join(work, 'unmarked');
    await mkdir(copy);
    for (const name of await readdir(source)) if (name !== SYNTHETIC_MARKER_FILE) await symlink(path.join(source, name), path.join(copy, name));
    assert.deepEqual(await resolveModelDir(copy), { dir: copy, synthetic: false });
  });

  test('an empty folder suggests model download', async () => {
    const empty = path.join(work, 'empty');
    await mkdir(empty);
    await assert.rejects(resolveModelDir(empty), (error: Error) => {
      assert.equal(error.message, `--model ${empty} is an empty folder; download one with \`scriptorium model download v1|v2|v3 --dir ${empty}\``);
      return true;
    });
  });

  test('a folder without config.json and a missing folder suggest model download too', async () => {
    const other = path.join(work, 'not-a-checkpoint');
    await mkdir(other);
    await writeFile(path.join(other, 'notes.txt'), 'hello');
    await assert.rejects(resolveModelDir(other), /holds no checkpoint \(no config\.json\); download one with `scriptorium model download v1\|v2\|v3 --dir /);
    await assert.rejects(resolveModelDir(path.join(work, 'absent')), /no such folder; download one with `scriptorium model download/);
  });

  test('ocr with --model on a synthetic checkpoint says so on stderr and in its JSON', async () => {
    const png = path.join(work, 'page.png');
    await writeFile(png, await makePng());
    const model = await tinyCheckpoint('v1');
    const { stdout, stderr } = await run(process.execPath, [cli, 'ocr', png, '--model', model, '--max-tokens', '2', '--mode', 'tiny', '--format', 'json']);
    assert.equal(JSON.parse(stdout).pages[0].model.synthetic, true);
    assert.match(stderr, /is a SYNTHETIC checkpoint written by `model synth`/);
  });

  test('ocr on an empty folder exits 1 with the download hint', async () => {
    const empty = path.join(work, 'empty-for-ocr');
    await mkdir(empty);
    const failed = await run(process.execPath, [cli, 'ocr', path.join(work, 'page.png'), '--model', empty]).then(
      () => assert.fail('ocr succeeded'),
      (error: { code: number; stderr: string }) => error,
    );
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /is an empty folder; download one with `scriptorium model download v1\|v2\|v3 --dir /);
  });
});
