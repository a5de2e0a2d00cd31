// Each generated token's log-probability (GenerationResult.logprobs) on a tiny V1 checkpoint,
// teacher-forced on the float64 reference's greedy ids: the native head's streamed log-sum-exp (no
// logits returned) within twice the step tolerance of the float64 log-softmax of the reference's
// logits (a log-softmax moves by at most twice its logits' largest error), within 1e-5 of the float64
// log-softmax of the engine's own logits (F32 exponentials and sums over the vocabulary), and bitwise
// the same batched as alone. On the CPU's kernel set, on every other set this CPU has (the file runs
// itself again under SCRIPTORIUM_KERNELS for each), and on the GPU backend (llvmpipe in CI; skipped
// without one unless SCRIPTORIUM_REQUIRE_VULKAN=1).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { gpuBackendReport } from '../../src/engine/compute-device.js';
import { generate } from '../../src/engine/generate.js';
import { nativeBinding } from '../../src/engine/native-binding.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { ReferenceDecoder } from '../reference/reference-decoder.js';
import { greedyReference, type GreedyResult } from '../reference/reference-generate.js';
import { maxAbs, RELATIVE_TOLERANCE } from '../support/compare-with-reference.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const PROMPT = [0, ...Array.from({ length: 40 }, (_, i) => 1000 + ((i * 7919) % 90000))];
const OTHER = [0, 42, 4242, 424, 24];
const STEPS = 16;
const SAME_LOGITS_TOLERANCE = 1e-5;
const CHILD = process.env.SCRIPTORIUM_LOGPROBS_CHILD === '1';
const report = await gpuBackendReport();
const gpuSkip = CHILD ? 'the parent run checks the GPU' : report.available || process.env.SCRIPTORIUM_REQUIRE_VULKAN === '1' ? false : `no GPU backend: ${report.reason}`;

/** Checks `model`'s log-probabilities against the reference's; returns the largest errors for the log. */
async function checkLogprobs(model: NativeModel, expected: GreedyResult): Promise<string> {
  const tolerance = 2 * RELATIVE_TOLERANCE * maxAbs(expected.prefillLogits);
  const request = { promptIds: PROMPT, maxNewTokens: STEPS, forceIds: expected.ids };
  const [together] = await generate(model, [request, { promptIds: OTHER, maxNewTokens: STEPS, stopAtEos: false }]);
  const [alone] = await generate(model, [request]);
  const [withLogits] = await generate(model, [{ ...request, recordTopK: 1 }]);
  assert.deepEqual(together.logprobs, alone.logprobs, 'batched with another sequence, the log-probabilities are those it gets alone');
  assert.equal(alone.logprobs.length, STEPS);
  let sameLogits = 0;
  let reference = 0;
  for (let step = 0; step < STEPS; step++) {
    assert.equal(alone.chosen[step], withLogits.chosen[step], `step ${step}: the head's argmax`);
    const own = Math.abs(alone.logprobs[step] - withLogits.logprobs[step]);
    assert.ok(own <= SAME_LOGITS_TOLERANCE, `step ${step}: ${alone.logprobs[step]} from the head, ${withLogits.logprobs[step]} from its logits`);
    sameLogits = Math.max(sameLogits, own);
    const [first, second] = expected.topk[step].logits;
    if (first - second < tolerance) continue; // a near tie: the engine may choose the other id
    assert.equal(alone.chosen[step], expected.ids[step], `step ${step}: the reference's argmax`);
    const error = Math.abs(alone.logprobs[step] - expected.logprobs[step]);
    assert.ok(error <= tolerance, `step ${step}: log-probability ${alone.logprobs[step]}, reference ${expected.logprobs[step]}, tolerance ${tolerance}`);
    reference = Math.max(reference, error);
  }
  return `${model.backend}: head against its own logits ${sameLogits.toExponential(2)}, against the reference ${reference.toExponential(2)} (tolerance ${tolerance.toExponential(2)})`;
}

describe('log-probabilities of generated tokens', () => {
  let dir: string;
  let expected: GreedyResult;
  before(async () => {
    dir = await tinyCheckpoint('v1');
    expected = greedyReference(ReferenceDecoder.load(dir), PROMPT, STEPS, { topk: 2 });
  });

  test('CPU: the head\'s against float64 log-softmax of the reference\'s and of its own logits, batched as alone', async (t) => {
    t.diagnostic(await checkLogprobs(await NativeModel.load(dir), expected));
  });

  test('int8: the head\'s against float64 log-softmax of its own logits', async () => {
    const model = await NativeModel.load(dir, { quantize: 'int8' });
    const request = { promptIds: PROMPT, maxNewTokens: STEPS, forceIds: expected.ids };
    const [streamed] = await generate(model, [request]);
    const [withLogits] = await generate(model, [{ ...request, recordTopK: 1 }]);
    streamed.logprobs.forEach((logprob, step) =>
      assert.ok(Math.abs(logprob - withLogits.logprobs[step]) <= SAME_LOGITS_TOLERANCE, `step ${step}: ${logprob} against ${withLogits.logprobs[step]}`),
    );
  });

  test('every other kernel set this CPU has: this file again under SCRIPTORIUM_KERNELS', async (t) => {
    const current = (await NativeModel.load(dir)).kernels;
    const others = nativeBinding().supportedKernelSets().filter((set) => set !== current);
    if (CHILD || others.length === 0) {
      t.skip(CHILD ? 'this is such a run' : `${current} is the only kernel set here`);
      return;
    }
    // Without the runner's NODE_TEST_CONTEXT the child reports in plain TAP rather than to this runner.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    for (const set of others) {
      const child = spawnSync(process.execPath, ['--test', fileURLToPath(import.meta.url)], {
        env: { ...env, SCRIPTORIUM_KERNELS: set, SCRIPTORIUM_LOGPROBS_CHILD: '1' },
        encoding: 'utf8',
      });
      assert.equal(child.status, 0, child.stdout + child.stderr);
      assert.match(child.stdout, new RegExp(`cpu-${set}: head`), `the child must have run on the ${set} set`);
      t.diagnostic(child.stdout.match(new RegExp(`cpu-${set}: head[^\\n]*`))![0]);
    }
  });

  test('GPU: the head\'s on the device against the same bounds, batched as alone', { skip: gpuSkip }, async (t) => {
    t.diagnostic(await checkLogprobs(await NativeModel.load(dir, { device: { kind: 'gpu', index: 0 } }), expected));
  });
});
