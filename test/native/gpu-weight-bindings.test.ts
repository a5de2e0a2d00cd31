// Weights larger than one shader binding on the Vulkan backend: the embedding and the vocabulary head
// split into blocks of rows and the stacked experts into ranges of experts, each block its own binding
// (native/vulkan/weights.h). On the synthetic 'wide' V1 checkpoint (official widths, embedding and
// head of 316 MiB each, past llvmpipe's 128 MiB) the GPU matches the CPU engine within the GPU-vs-CPU
// tolerance of gpu-decoder.test.ts; under a smaller binding cap (SCRIPTORIUM_GPU_WEIGHT_BINDING_BYTES,
// test-only) that also splits the expert stacks, its results are bitwise those of the device's own
// limit, and on a tiny checkpoint bitwise those of the unsplit path. Skipped where the GPU backend is
// absent, unless SCRIPTORIUM_REQUIRE_VULKAN=1 makes that a failure.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { gpuBackendReport } from '../../src/engine/compute-device.js';
import type { NativeSequence } from '../../src/engine/native-binding.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { maxAbs, maxAbsDiff } from '../support/compare-with-reference.js';
import { tinyCheckpoint, wideCheckpoint } from '../support/tiny-checkpoints.js';

const TOLERANCE = 1e-3; // of the largest |logit|, as gpu-decoder.test.ts
const CAP_VARIABLE = 'SCRIPTORIUM_GPU_WEIGHT_BINDING_BYTES';
// The wide checkpoint's largest tensor kept whole, a dense MLP matrix [6848, 1280]: under this cap its
// expert stacks (8 × 896 × 1280 BF16) split 7 + 1 and the embedding and head into 19 blocks of rows.
const WIDE_CAP = 6848 * 1280 * 2;
const TINY_CAP = 4 << 20; // the tiny embedding and head (129280 × 256 BF16) in 16 blocks
const PROMPTS = [
  [0, 5000, 6000, 7000, 8000, 9000, 10000, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22],
  [0, 42, 4242, 424, 24, 129279],
];
const report = await gpuBackendReport();
const skip = report.available || process.env.SCRIPTORIUM_REQUIRE_VULKAN === '1' ? false : `no GPU backend: ${report.reason}`;

async function loadGpu(dir: string, cap?: number): Promise<NativeModel> {
  if (cap === undefined) return NativeModel.load(dir, { device: { kind: 'gpu', index: 0 } });
  process.env[CAP_VARIABLE] = String(cap);
  try {
    return await NativeModel.load(dir, { device: { kind: 'gpu', index: 0 } });
  } finally {
    delete process.env[CAP_VARIABLE];
  }
}

interface Step {
  logits: Float32Array[];
  best: number[];
  logprob: number[];
}

/** A prefill of PROMPTS as one batch, then `steps` decode steps, sequence i fed next(step, i, the step's best ids): every step's results. */
async function run(model: NativeModel, steps: number, next: (step: number, i: number, best: number[]) => number): Promise<Step[]> {
  const sequences: NativeSequence[] = PROMPTS.map(() => model.createSequence());
  const out: Step[] = [];
  let inputs = PROMPTS.map((p) => Int32Array.from(p));
  for (let step = 0; step <= steps; step++) {
    const results = await model.forward(sequences.map((sequence, i) => ({ sequence, ids: inputs[i] })));
    out.push({ logits: results.map((r) => r.logits!), best: results.map((r) => r.best), logprob: results.map((r) => r.logprob) });
    inputs = PROMPTS.map((_, i) => Int32Array.of(next(step, i, out[step].best)));
  }
  return out;
}

function assertBitwise(got: Step[], want: Step[], what: string): void {
  got.forEach((step, s) => {
    assert.deepEqual(step.best, want[s].best, `${what}, step ${s}: best ids`);
    assert.deepEqual(step.logprob, want[s].logprob, `${what}, step ${s}: log-probabilities`);
    step.logits.forEach((row, i) => assert.deepEqual(row, want[s].logits[i], `${what}, step ${s}, sequence ${i}: logits`));
  });
}

describe('weights split into several bindings on the GPU backend', { skip }, () => {
  test('tiny v3: under a 4 MiB binding cap bitwise the unsplit path', async () => {
    const dir = await tinyCheckpoint('v3');
    const whole = await run(await loadGpu(dir), 3, (step, i) => 100 + 1000 * i + step);
    const split = await run(await loadGpu(dir, TINY_CAP), 3, (step, i) => 100 + 1000 * i + step);
    assertBitwise(split, whole, 'tiny v3 split');
  });

  describe('wide v1: embedding and head of 316 MiB each', () => {
    const EMBED_BYTES = 129280 * 1280 * 2;
    let dir: string;
    let cpuSteps: Step[];
    let gpuSteps: Step[];
    const teacher = (step: number, i: number) => cpuSteps[step].best[i]; // every engine follows the CPU's ids
    before(async () => {
      dir = await wideCheckpoint('v1');
      cpuSteps = await run(await NativeModel.load(dir, { threads: 2 }), 3, (_step, i, best) => best[i]);
    });

    test("on the device's own binding limit the GPU matches the CPU engine", async (t) => {
      const limit = report.devices[0].bindingLimitBytes;
      t.diagnostic(`binding limit ${limit} bytes: the embedding (${EMBED_BYTES} bytes) takes ${Math.ceil(EMBED_BYTES / limit)} binding(s)`);
      gpuSteps = await run(await loadGpu(dir), 3, teacher);
      gpuSteps.forEach((step, s) =>
        step.logits.forEach((row, i) => {
          const want = cpuSteps[s].logits[i];
          const scale = maxAbs(want);
          assert.ok(maxAbsDiff(row, want) <= TOLERANCE * scale, `step ${s}, sequence ${i}: logits off by ${maxAbsDiff(row, want)} of ${scale}`);
          const sorted = Float32Array.from(want).sort();
          if (sorted[sorted.length - 1] - sorted[sorted.length - 2] > TOLERANCE * scale) assert.equal(step.best[i], cpuSteps[s].best[i]);
        }),
      );
    });

    test("under a binding cap that also splits the expert stacks: bitwise the device's own split", async () => {
      assert.ok(gpuSteps, 'the previous test ran');
      assertBitwise(await run(await loadGpu(dir, WIDE_CAP), 3, teacher), gpuSteps, 'wide v1 under the cap');
    });
  });
});
