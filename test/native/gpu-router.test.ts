// The MoE router on the Vulkan backend reads the checkpoint's values in F32, as the CPU engine does,
// so a router stored in F32 picks the same experts on both. The checkpoint is the tiny V1 in F32 with
// its router rows made into groups of four near-ties: in every MoE layer, expert 4g + i is expert 4g
// scaled by 1 + i·2^-12. In F32 the scaled rows outrank the group's first when its logit is positive;
// rounded to BF16 all four are the same row, and the lowest ids win. On the GPU the prefill logits
// must stay within 1e-3 of the CPU's largest logit, and the same checkpoint with its router rounded
// to BF16 must not (on the CPU), so the comparison can tell the two apart. Skipped where the GPU
// backend is absent, unless SCRIPTORIUM_REQUIRE_VULKAN=1 makes that a failure.
import assert from 'node:assert/strict';
import { cp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';

import { gpuBackendReport } from '../../src/engine/compute-device.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const TOLERANCE = 1e-3; // of the largest |logit|, as in gpu-decoder.test.ts
const GROUP = 4;
const STEP = 2 ** -12; // three steps stay below BF16's half step (at least 2^-9 of a value): rounding undoes them
const report = await gpuBackendReport();
const skip = report.available || process.env.SCRIPTORIUM_REQUIRE_VULKAN === '1' ? false : `no GPU backend: ${report.reason}`;

/** x rounded to the nearest BF16 (ties to even), as F32. */
function bf16(x: number): number {
  const bits = new Uint32Array(new Float32Array([x]).buffer)[0];
  const rounded = (bits + 0x7fff + ((bits >>> 16) & 1)) & 0xffff0000;
  return new Float32Array(new Uint32Array([rounded >>> 0]).buffer)[0];
}

/** A copy of the F32 tiny V1 with near-tie router groups; `roundRouter` then rounds the router to BF16. */
async function groupedRouterCheckpoint(roundRouter: boolean): Promise<string> {
  const source = await tinyCheckpoint('v1', 1, 'f32');
  const dir = path.join(os.tmpdir(), `scriptorium-test-router-groups-${roundRouter ? 'bf16' : 'f32'}-${process.pid}`);
  await cp(source, dir, { recursive: true });
  const file = path.join(dir, 'model-00001-of-000001.safetensors');
  const bytes = await readFile(file);
  const headerBytes = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerBytes).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const data = new DataView(bytes.buffer, bytes.byteOffset + 8 + headerBytes);
  let routers = 0;
  for (const [name, entry] of Object.entries(header)) {
    if (!name.endsWith('.mlp.gate.weight')) continue;
    assert.equal(entry.dtype, 'F32', name);
    const [experts, hidden] = entry.shape;
    const at = (expert: number, k: number) => entry.data_offsets[0] + (expert * hidden + k) * 4;
    for (let expert = 0; expert < experts; expert++) {
      const first = expert - (expert % GROUP);
      for (let k = 0; k < hidden; k++) {
        const value = data.getFloat32(at(first, k), true) * (1 + (expert % GROUP) * STEP);
        data.setFloat32(at(expert, k), roundRouter ? bf16(value) : value, true);
      }
    }
    routers++;
  }
  assert.ok(routers > 0, 'the checkpoint has no MoE router');
  await writeFile(file, bytes);
  return dir;
}

// A group whose logit is within rounding of zero may rank its rows either way on either engine: these
// 48 tokens meet none.
const PROMPT = Int32Array.from({ length: 48 }, (_, i) => (i === 0 ? 0 : 1000 + ((i * 7919) % 90000)));

async function prefillLogits(model: NativeModel): Promise<Float32Array> {
  const [output] = await model.forward([{ sequence: model.createSequence(), ids: PROMPT }]);
  return output.logits!;
}

function largestDifference(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

describe('the MoE router on the GPU backend', { skip }, () => {
  test('a router stored in F32 picks the CPU engine\'s experts, where BF16 would not', async () => {
    const exact = await groupedRouterCheckpoint(false);
    const cpu = await prefillLogits(await NativeModel.load(exact, { threads: 2 }));
    const gpu = await prefillLogits(await NativeModel.load(exact, { device: { kind: 'gpu', index: 0 } }));
    const cpuRounded = await prefillLogits(await NativeModel.load(await groupedRouterCheckpoint(true), { threads: 2 }));
    const scale = cpu.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    const gpuDifference = largestDifference(gpu, cpu);
    const roundedDifference = largestDifference(cpuRounded, cpu);
    assert.ok(roundedDifference > TOLERANCE * scale, `the BF16 router changed the logits by ${roundedDifference} only: the groups never split`);
    assert.ok(gpuDifference <= TOLERANCE * scale, `GPU logits differ by ${gpuDifference}, over ${TOLERANCE} × ${scale} (a BF16 router differs by ${roundedDifference})`);
  });
});
