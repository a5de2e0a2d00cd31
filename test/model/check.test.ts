// `scriptorium model check`: what it reports for sound checkpoints in every accepted form, for each
// damaged one (the cases loading is tested on), for an s3:// prefix, and that workers and `ocr`
// refuse what it refuses, with its report.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import { NativeModel } from '../../src/engine/native-model.js';
import { modelConfig } from '../../src/model/synth/model-configs.js';
import { elementCount, tensorManifest } from '../../src/model/synth/tensor-manifest.js';
import { checkCheckpoint } from '../../src/model/checkpoint-check.js';
import { openStorage } from '../../src/storage/open-storage.js';
import type { S3Storage } from '../../src/storage/s3-storage.js';
import { damagedCheckpoints } from '../support/damaged-checkpoints.js';
import { makePng } from '../support/make-documents.js';
import { startS3Server, useS3rverCredentials } from '../support/s3-server.js';
import { isNormTensor, tinyCheckpoint } from '../support/tiny-checkpoints.js';

const run = promisify(execFile);
const cli = path.resolve('dist/src/cli/main.js');
const manifest = tensorManifest(modelConfig('v1', 'tiny'));
const parameters = manifest.reduce((sum, spec) => sum + elementCount(spec), 0);
const readElements = manifest.filter((spec) => !spec.unread).reduce((sum, spec) => sum + elementCount(spec), 0);
const tinyDir = await tinyCheckpoint('v1');
const shard = path.join(tinyDir, (await readdir(tinyDir)).find((name) => name.endsWith('.safetensors'))!);
let work: string;

before(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-check-'));
});
after(() => rm(work, { recursive: true, force: true }));

/** The identity as docs/operations.md "Checkpoints" defines it: sha256 over "<sha256>  <name>  <size>" lines of the deciding files. */
async function expectedIdentity(dir: string): Promise<string> {
  const names = (await readdir(dir)).filter((n) => n === 'config.json' || n === 'tokenizer.json' || n.endsWith('.safetensors')).sort();
  const lines: string[] = [];
  for (const name of names) {
    const bytes = await readFile(path.join(dir, name));
    lines.push(`${createHash('sha256').update(bytes).digest('hex')}  ${name}  ${bytes.length}\n`);
  }
  return `sha256:${createHash('sha256').update(lines.join('')).digest('hex')}`;
}

describe('model check on sound checkpoints', () => {
  test('the BF16 checkpoint: variant, parameters, dtypes, tokenizer, identity, exit 0', async () => {
    const { stdout } = await run(process.execPath, [cli, 'model', 'check', tinyDir, '--json']);
    const report = JSON.parse(stdout);
    assert.equal(report.loadable, true);
    assert.deepEqual(report.problems, []);
    assert.equal(report.variant, 'v1');
    assert.equal(report.parameters, parameters);
    assert.deepEqual(report.dtypes, { BF16: manifest.length });
    assert.deepEqual([report.missing, report.misshaped, report.unusableDtypes, report.unexpected], [[], [], [], []]);
    assert.equal(report.conversionBytes, 0);
    assert.deepEqual(report.tokenizer.present, ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json']);
    assert.match(report.tokenizer.vocabulary, /^matches/);
    assert.equal(report.identity, await expectedIdentity(tinyDir));
    assert.equal(report.synthetic, true);
    const text = await run(process.execPath, [cli, 'model', 'check', tinyDir, '--no-identity']);
    assert.match(text.stdout, /^ {2}result {6}a worker would load it$/m);
  });

  test('F32 weights: every tensor F32, and the BF16 copies they cost', async () => {
    const report = await checkCheckpoint(await tinyCheckpoint('v1', 1, 'f32'));
    assert.equal(report.loadable, true);
    assert.deepEqual(report.dtypes, { F32: manifest.length });
    assert.equal(report.conversionBytes, 2 * readElements);
  });

  test('norms in F32: the norm tensors F32, the rest BF16', async () => {
    const report = await checkCheckpoint(await tinyCheckpoint('v1', 1, 'norms-f32'));
    const norms = manifest.filter((spec) => isNormTensor(spec.name)).length;
    assert.ok(norms > 10);
    assert.deepEqual(report.dtypes, { BF16: manifest.length - norms, F32: norms });
    assert.equal(report.loadable, true);
  });

  test('an extra int64 buffer is listed as ignored, and the checkpoint loads', async () => {
    const report = await checkCheckpoint(await tinyCheckpoint('v1', 1, 'position-ids'));
    assert.deepEqual(report.unexpected, [{ name: 'model.vision_model.embeddings.position_ids', dtype: 'I64', shape: [1, 257] }]);
    assert.equal(report.loadable, true);
  });

  test('a tokenizer whose <image> token sits at another id is refused', async () => {
    const dir = path.join(work, 'other-tokenizer');
    await mkdir(dir);
    for (const name of await readdir(tinyDir)) if (name !== 'tokenizer.json') await symlink(path.join(tinyDir, name), path.join(dir, name));
    const tokenizer = JSON.parse(await readFile(path.join(tinyDir, 'tokenizer.json'), 'utf8'));
    tokenizer.added_tokens.find((t: { content: string }) => t.content === '<image>').id = 5;
    await writeFile(path.join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
    const report = await checkCheckpoint(dir, { identity: false });
    assert.equal(report.loadable, false);
    assert.deepEqual(report.problems, ['tokenizer.json: 1 special tokens the prompts use are at other ids: <image> is 5 (expected 128815)']);
  });
});

test('the tensors the check requires are exactly the ones the engine reads, for every variant', async () => {
  for (const variant of ['v1', 'v2', 'v3'] as const) {
    const model = await NativeModel.load(await tinyCheckpoint(variant), { threads: 1 });
    const unread = tensorManifest(modelConfig(variant, 'tiny')).filter((spec) => spec.unread).map((spec) => spec.name);
    assert.deepEqual(model.unreadTensors, unread, variant);
  }
});

describe('model check on damaged checkpoints', () => {
  const damaged = damagedCheckpoints(tinyDir, shard);
  after(() => damaged.cleanup());
  for (const { damage, make, error } of damaged.cases) {
    test(`${damage}: refused, with the loader's reason among the problems`, async () => {
      const report = await checkCheckpoint(await make());
      assert.equal(report.loadable, false);
      assert.ok(report.problems.some((problem) => error.test(problem)), `${error} not in ${JSON.stringify(report.problems)}`);
    });
  }

  test('the CLI exits 1 and ocr refuses the checkpoint with the same report', async () => {
    const dir = await damaged.cases.find((c) => c.damage === 'a tensor missing from the checkpoint')!.make();
    const check = await run(process.execPath, [cli, 'model', 'check', dir]).then(() => assert.fail('model check passed'), (e: { code: number; stdout: string }) => e);
    assert.equal(check.code, 1);
    assert.match(check.stdout, /- missing tensor model\.norm\.weight\n {2}result {6}a worker would refuse it/);
    const png = path.join(work, 'page.png');
    await writeFile(png, await makePng());
    const ocr = await run(process.execPath, [cli, 'ocr', png, '--model', dir]).then(() => assert.fail('ocr ran'), (e: { code: number; stderr: string }) => e);
    assert.equal(ocr.code, 1);
    assert.match(ocr.stderr, /the checkpoint cannot be loaded:\ncheckpoint .*\n[^]*- missing tensor model\.norm\.weight\n {2}result {6}a worker would refuse it/);
  });
});

describe('model check on an s3:// prefix', () => {
  test('reads the headers from the bucket and derives the identity from SHA256SUMS; without it, refuses', async () => {
    useS3rverCredentials();
    const s3 = await startS3Server({ buckets: ['models'] });
    process.env.S3_ENDPOINT = s3.endpoint;
    const bucket = openStorage('s3://models') as S3Storage;
    try {
      const names = (await readdir(tinyDir)).filter((name) => !name.startsWith('.'));
      const sums: string[] = [];
      for (const name of names) {
        const bytes = await readFile(path.join(tinyDir, name));
        await bucket.put(`tiny/${name}`, bytes);
        sums.push(`${createHash('sha256').update(bytes).digest('hex')}  ${name}\n`);
      }
      await bucket.put('tiny/SHA256SUMS', Buffer.from(sums.join('')));
      const report = await checkCheckpoint('s3://models/tiny/', { identity: true });
      assert.deepEqual(report.problems, []);
      assert.equal(report.variant, 'v1');
      assert.deepEqual(report.dtypes, { BF16: manifest.length });
      assert.equal(report.weightBytes, (await stat(shard)).size - 8 - Number((await readFile(shard)).readBigUInt64LE(0)));
      assert.equal(report.identity, await expectedIdentity(tinyDir));
      await bucket.put('unlisted/config.json', await readFile(path.join(tinyDir, 'config.json')));
      const unlisted = await checkCheckpoint('s3://models/unlisted/', { identity: true });
      assert.equal(unlisted.loadable, false);
      assert.match(unlisted.problems.join('\n'), /no SHA256SUMS: workers fetch only the files it names/);
    } finally {
      bucket.destroy();
      await s3.close();
      delete process.env.S3_ENDPOINT;
    }
  });
});
