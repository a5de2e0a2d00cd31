// The device check (native/device_check) as it would run on a bare GPU machine, here on a CPU's
// software Vulkan: built with its plans (whose writer fails unless the program's synthetic checkpoints
// are bitwise the TypeScript generator's), run end to end on the tiny plans (every check passes,
// every case is timed), and run again with a reference one logit off, which must fail. Skipped where
// the GPU backend is absent, unless SCRIPTORIUM_REQUIRE_VULKAN=1 (as .ci/run sets it) makes that a failure.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { gpuBackendReport } from '../../src/engine/compute-device.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const report = await gpuBackendReport();
const skip = report.available || process.env.SCRIPTORIUM_REQUIRE_VULKAN === '1' ? false : `no GPU backend: ${report.reason}`;

/** Runs a command; resolves with its exit code and output whatever the code. */
function run(command: string, args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, output: stdout + stderr });
    });
  });
}

describe('the device check', { skip }, () => {
  let out: string;
  before(async () => {
    out = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-device-check-test-'));
    const built = await run('bash', ['native/device_check/build.sh', out]);
    assert.equal(built.code, 0, built.output);
  });
  after(async () => {
    await rm(out, { recursive: true, force: true });
  });

  test('is a few MB: the program, its script, the Vulkan loader and the plans', async () => {
    const { output } = await run('du', ['-sb', out]);
    const bytes = Number(output.split('\t')[0]);
    assert.ok(bytes < 16 << 20, `${bytes} bytes`);
    for (const file of ['device-check', 'run.sh', 'lib/libvulkan.so.1', 'plans/tiny-v1.json', 'plans/full-v3.json', 'plans/tiny-v3.reference.bin'])
      await readFile(path.join(out, file)).catch(() => assert.fail(`${file} is missing`));
  });

  test('passes on the tiny plans, with every case timed', async (t) => {
    const { code, output } = await run('bash', [path.join(out, 'run.sh'), '--sizes', 'tiny']);
    for (const line of output.trim().split('\n')) t.diagnostic(line);
    assert.equal(code, 0, output);
    assert.match(output, /^ok {4}tiny-v1 exact, portable path: prefill logits within/m);
    assert.match(output, /^ok {4}tiny-v3 fast, portable path/m);
    const plans = JSON.parse(await readFile(path.join(out, 'plans/tiny-v1.json'), 'utf8')) as { cases: { name: string }[] };
    for (const { name } of plans.cases) assert.match(output, new RegExp(`^\\| tiny-v1 \\| ${name.replace(/[()]/g, '\\$&')} \\| [0-9.]+ ms`, 'm'));
    assert.match(output, /^device check passed$/m);
  });

  test('fails when the device disagrees with the reference: one prefill logit moved', async () => {
    const plans = path.join(out, 'altered');
    await cp(path.join(out, 'plans'), plans, { recursive: true });
    for (const variant of ['v1', 'v3']) {  // the checks alone
      const file = path.join(plans, `tiny-${variant}.json`);
      await writeFile(file, JSON.stringify({ ...JSON.parse(await readFile(file, 'utf8')), cases: [] }));
    }
    const reference = path.join(plans, 'tiny-v1.reference.bin');
    const bytes = await readFile(reference);
    bytes.writeFloatLE(bytes.readFloatLE(400) + 5, 400);  // the exact precision's logit 100
    await writeFile(reference, bytes);
    const { code, output } = await run('bash', [path.join(out, 'run.sh'), '--sizes', 'tiny', '--plans', plans]);
    assert.equal(code, 1, output);
    assert.match(output, /^FAIL {2}tiny-v1 exact, portable path/m);
    assert.match(output, /^ok {4}tiny-v1 fast, portable path/m);
    assert.match(output, /^ok {4}tiny-v3 exact, portable path/m);
    assert.match(output, /^1 failed$/m);
  });
});
