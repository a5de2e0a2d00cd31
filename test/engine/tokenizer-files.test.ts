import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { writeTokenizerFiles, type TokenizerJson } from '../../src/engine/tokenizer-files.js';

const checkpointDir = await mkdtemp(path.join(tmpdir(), 'scriptorium-tokenizer-files-'));
after(() => rm(checkpointDir, { recursive: true, force: true }));
await writeTokenizerFiles(checkpointDir);
const written = (name: string) => readFile(path.join(checkpointDir, name));
const tokenizerJson = JSON.parse((await written('tokenizer.json')).toString('utf8')) as TokenizerJson;

/** The official tokenizer fixtures in ../shared beside the repository, when that folder exists. */
const fixtureDir = fileURLToPath(new URL('../../../../shared/fixtures/unlimited-ocr/', import.meta.url));
const noFixtures = existsSync(fixtureDir) ? false : `no ${fixtureDir}`;

/** `git hash-object` of `bytes`. */
function gitBlobId(bytes: Buffer): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

test('writes tokenizer.json byte-identical to the official DeepSeek-OCR file (9,979,544 bytes)', async () => {
  const bytes = await written('tokenizer.json');
  assert.equal(bytes.length, 9_979_544);
  assert.equal(gitBlobId(bytes), 'c93a1c4d2ecf31bb5a9ec39eb73dfbf915aaf77e');
});

test('writes tokenizer_config.json byte-identical to the official file', async () => {
  assert.equal(gitBlobId(await written('tokenizer_config.json')), 'ba9d4175d69cde58ad9f68a76a4758df091eaffa');
});

test('writes special_tokens_map.json byte-identical to the official file', async () => {
  assert.equal(gitBlobId(await written('special_tokens_map.json')), 'd59d312be868edc63b195e19e256c730dba685ad');
});

for (const name of ['tokenizer_config.json', 'special_tokens_map.json']) {
  test(`writes ${name} equal to the shared fixture`, { skip: noFixtures }, async () => {
    assert.deepEqual(await written(name), await readFile(path.join(fixtureDir, name)));
  });
}

test('tokenizer.json holds the 128,000-token vocabulary and 127,741 merges as pairs', () => {
  const { model } = tokenizerJson;
  assert.equal(Object.keys(model.vocab).length, 128_000);
  assert.equal(model.merges.length, 127_741);
  assert.deepEqual(model.merges[0], ['Ġ', 't']);
  assert.equal(model.ignore_merges, false);
});

test('tokenizer.json adds the 12 OCR tokens, special and not normalized, at ids 128815 to 128826', () => {
  const { added_tokens: added } = tokenizerJson;
  assert.equal(added.length, 830);
  assert.deepEqual(added.slice(-12).map((t) => [t.id, t.content, t.special, t.normalized]), [
    [128815, '<image>', true, false], [128816, '<|ref|>', true, false], [128817, '<|/ref|>', true, false],
    [128818, '<|det|>', true, false], [128819, '<|/det|>', true, false], [128820, '<|grounding|>', true, false],
    [128821, '<td>', true, false], [128822, '</td>', true, false], [128823, '<tr>', true, false],
    [128824, '</tr>', true, false], [128825, '<|User|>', true, false], [128826, '<|Assistant|>', true, false],
  ]);
});

test('tokenizer.json post-processor prepends BOS (id 0) to single and pair sequences', () => {
  const { post_processor: postProcessor } = tokenizerJson;
  const bos = '<｜begin▁of▁sentence｜>';
  assert.deepEqual(postProcessor, {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [
      { SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
      { SpecialToken: { id: bos, type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } },
    ],
    special_tokens: { [bos]: { id: bos, ids: [0], tokens: [bos] } },
  });
});
