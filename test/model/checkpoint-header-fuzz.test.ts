// Fuzzing the loader with damaged headers of a real tiny checkpoint: a fixed seed gives the same
// mutations of shapes, offsets, dtypes, the header and file lengths and the JSON syntax every run.
// Each mutation is loaded in a child process (a crash fails the test and names the mutation); every
// refusal must be a clear error naming the file (and the tensor, when the mutation targets one),
// and every mutation that no loader may accept must be refused. A sample also goes through
// `model check`, which must refuse exactly what loading refuses, for the same reason.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

import { checkCheckpoint } from '../../src/model/checkpoint-check.js';
import { headerMutations, writeMutatedFile, type MutationKind } from '../support/header-mutations.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const SEED = 20261203;
const COUNT = 1500;
/** Every this many mutations also go through model check. */
const CHECK_EVERY = 100;
const child = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'support', 'header-fuzz-child.js');

test(`${COUNT} seeded header mutations of a tiny checkpoint are each refused with a clear error or loaded, never a crash`, async () => {
  const dir = await tinyCheckpoint('v1');
  const index = JSON.parse(await readFile(path.join(dir, 'model.safetensors.index.json'), 'utf8'));
  const shard = path.join(dir, Object.values(index.weight_map as Record<string, string>)[0]);
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-fuzz-'));
  try {
    const run = spawn(process.execPath, [child, shard, path.join(dir, 'config.json'), String(SEED), String(COUNT), workDir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let lastLoading = '';
    run.stdout.on('data', (chunk) => (stdout += chunk));
    run.stderr.on('data', (chunk) => (lastLoading = String(chunk).trim().split('\n').at(-1) ?? lastLoading));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => run.on('close', (c, s) => resolve([c, s])));
    assert.equal(signal, null, `the loader crashed with ${signal} while ${lastLoading}`);
    assert.equal(code, 0, `the fuzz child exited with ${code} while ${lastLoading}`);

    const outcomes = stdout.trim().split('\n').map((line) => JSON.parse(line) as { i: number; error?: string });
    assert.equal(outcomes.length, COUNT);
    // The child derives the same mutations from the same seed.
    const file = await readFile(shard);
    const headerLength = Number(file.readBigUInt64LE(0));
    const mutations = headerMutations(file.subarray(8, 8 + headerLength).toString('utf8'), file.length - 8 - headerLength, COUNT, SEED);
    const counts: Record<string, { total: number; refused: number }> = {};
    for (const { i, error } of outcomes) {
      const mutation = mutations[i];
      const count = (counts[mutation.kind] ??= { total: 0, refused: 0 });
      count.total += 1;
      const label = `mutation ${i} (${mutation.kind}: ${mutation.what})`;
      if (error === undefined) {
        assert.ok(!mutation.mustFail, `${label} was loaded`);
        continue;
      }
      count.refused += 1;
      assert.match(error, /^model file \S+: \S/, `${label}: unclear error "${error}"`);
      if (mutation.expect) assert.match(error, mutation.expect, label);
      if (mutation.tensor && mutation.mustFail) {
        assert.ok(error.includes(mutation.tensor) || error.includes('overlap'), `${label}: the error does not name the tensor: "${error}"`);
      }
    }
    const kinds: MutationKind[] = ['shape', 'offsets', 'dtype', 'length', 'syntax'];
    for (const kind of kinds) assert.ok(counts[kind].total >= COUNT / 5, `${kind}: ${counts[kind].total} mutations`);
    assert.ok(mutations.some((m) => m.what.includes('shape [4294967296,4294967296]')), 'the [2^32, 2^32] wrap is among the mutations');
    process.stdout.write(`# header fuzz: ${JSON.stringify(counts)}\n`);

    // model check reads the same headers without loading: on a sample it must agree with the loader.
    const checkDir = path.join(workDir, 'check');
    await mkdir(checkDir);
    await copyFile(path.join(dir, 'config.json'), path.join(checkDir, 'config.json'));
    await symlink(path.join(dir, 'tokenizer.json'), path.join(checkDir, 'tokenizer.json'));
    const withoutFile = (message: string) => message.replace(/^model file [^:]*: /, '');
    for (let i = 0; i < COUNT; i += CHECK_EVERY) {
      await writeMutatedFile(path.join(checkDir, 'model.safetensors'), mutations[i], file.length - 8 - headerLength);
      const report = await checkCheckpoint(checkDir);
      const error = outcomes[i].error;
      const label = `mutation ${i} (${mutations[i].kind}: ${mutations[i].what})`;
      assert.equal(report.loadable, error === undefined, `${label}: check ${JSON.stringify(report.problems)}, load ${error}`);
      if (error !== undefined) {
        assert.ok(report.problems.map(withoutFile).includes(withoutFile(error)), `${label}: "${error}" not in ${JSON.stringify(report.problems)}`);
      }
    }
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
});
