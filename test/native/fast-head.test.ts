// The vocabulary head in fast precision (docs/engine.md, "The vocabulary head in fast precision"):
// one BF16 product per logit, then the chunks that could hold the best id computed again exactly,
// so every greedy id is the exact head's. Random weights seldom give a runner-up close enough for
// the one-product head to misjudge, so the test makes one at every step: a first run records each
// step's final hidden state x (solved from the exact head's logits), then the head gets, per step, a
// row that is the best row plus a large change orthogonal to x. Its exact logit then differs from the
// best's only by the change's BF16 rounding, about what rounding x to BF16 moves it, so the one-
// product head alone would often choose the other of the two.
import assert from 'node:assert/strict';
import { cp, mkdtemp, open, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { NativeModel } from '../../src/engine/native-model.js';
import { bf16ToF32, f32ToBf16 } from '../../src/model/synth/random-weights.js';
import { PRECISION_BOUNDS } from '../support/precision-bounds.js';
import { seededRandom } from '../support/seeded-random.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const SHARD = 'model-00001-of-000001.safetensors';
const PROMPT = [0, ...Array.from({ length: 30 }, (_, i) => 1000 + ((i * 7919) % 90000))];
const STEPS = 24;
const SOLVE_ROWS = 1024; // head rows the hidden state is solved from

/** The head's BF16 rows in the shard of `dir`, and where they start in the file. */
async function readHead(dir: string): Promise<{ rows: Uint16Array; vocab: number; hidden: number; offset: number }> {
  const file = await open(path.join(dir, SHARD), 'r');
  try {
    const size = Buffer.alloc(8);
    await file.read(size, 0, 8, 0);
    const headerBytes = Number(size.readBigUInt64LE());
    const header = Buffer.alloc(headerBytes);
    await file.read(header, 0, headerBytes, 8);
    const entry = JSON.parse(header.toString('utf8'))['lm_head.weight'] as { dtype: string; shape: [number, number]; data_offsets: [number, number] };
    assert.equal(entry.dtype, 'BF16');
    const offset = 8 + headerBytes + entry.data_offsets[0];
    const bytes = Buffer.alloc(entry.data_offsets[1] - entry.data_offsets[0]);
    await file.read(bytes, 0, bytes.length, offset);
    return { rows: new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2), vocab: entry.shape[0], hidden: entry.shape[1], offset };
  } finally {
    await file.close();
  }
}

/** x minimising |W x - logits| over the first SOLVE_ROWS head rows (normal equations, Gaussian elimination in float64). */
function solveHidden(rows: Uint16Array, hidden: number, logits: Float32Array): Float64Array {
  const a = Array.from({ length: hidden }, () => new Float64Array(hidden + 1));
  for (let r = 0; r < SOLVE_ROWS; r++) {
    const w = Array.from({ length: hidden }, (_, k) => bf16ToF32(rows[r * hidden + k]));
    for (let i = 0; i < hidden; i++) {
      for (let j = 0; j < hidden; j++) a[i][j] += w[i] * w[j];
      a[i][hidden] += w[i] * logits[r];
    }
  }
  for (let c = 0; c < hidden; c++) {
    let pivot = c;
    for (let r = c + 1; r < hidden; r++) if (Math.abs(a[r][c]) > Math.abs(a[pivot][c])) pivot = r;
    [a[c], a[pivot]] = [a[pivot], a[c]];
    for (let r = 0; r < hidden; r++) {
      if (r === c) continue;
      const f = a[r][c] / a[c][c];
      for (let j = c; j <= hidden; j++) a[r][j] -= f * a[c][j];
    }
  }
  return Float64Array.from({ length: hidden }, (_, i) => a[i][hidden] / a[i][i]);
}

describe('the vocabulary head in fast precision', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-fast-head-'));
    await cp(await tinyCheckpoint('v1'), dir, { recursive: true });
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('every greedy id is the exact head\'s, on runners-up closer than one BF16 rounding and past banned ids', async (t) => {
    const first = await NativeModel.load(dir, { precision: 'fast' });
    if (first.kernels !== 'avx512bf16') {
      t.skip(`the ${first.kernels} kernel set has no one-product head: fast precision's head is its exact one`);
      return;
    }
    // The first run: the exact head's ids and logits (a call that returns logits runs the exact head).
    const head = await readHead(dir);
    const ids: number[] = [];
    const hiddenStates: Float64Array[] = [];
    const sequence = first.createSequence();
    let input = Int32Array.from(PROMPT);
    for (let step = 0; step < STEPS; step++) {
      const [out] = await first.forward([{ sequence, ids: input, logits: true }]);
      ids.push(out.best);
      hiddenStates.push(solveHidden(head.rows, head.hidden, out.logits!));
      input = Int32Array.of(out.best);
    }
    sequence.release();

    // Each step's close rival: a row no step chooses, set to the best row plus a change orthogonal to
    // that step's x of half the row's length, rounded to BF16.
    const random = seededRandom(7);
    const chosen = new Set(ids);
    let rival = head.vocab - 1;
    const rivals: number[] = [];
    for (let step = 0; step < STEPS; step++) {
      while (chosen.has(rival) || rivals.includes(rival)) rival--;
      rivals.push(rival);
      const x = hiddenStates[step];
      const best = Array.from({ length: head.hidden }, (_, k) => bf16ToF32(head.rows[ids[step] * head.hidden + k]));
      const change = Array.from({ length: head.hidden }, () => random() - 0.5);
      const along = change.reduce((sum, v, k) => sum + v * x[k], 0) / x.reduce((sum, v) => sum + v * v, 0);
      for (let k = 0; k < head.hidden; k++) change[k] -= along * x[k];
      const scale = 0.5 * Math.hypot(...best) / Math.hypot(...change);
      for (let k = 0; k < head.hidden; k++) head.rows[rival * head.hidden + k] = f32ToBf16(best[k] + scale * change[k]);
    }
    const file = await open(path.join(dir, SHARD), 'r+');
    await file.write(new Uint8Array(head.rows.buffer, head.rows.byteOffset, head.rows.byteLength), 0, head.rows.byteLength, head.offset);
    await file.close();

    // The second run, on the changed head: one sequence takes the fast head, the other the exact
    // head, both fed the first run's ids. Every fourth step bans that step's best, so the answer
    // comes from past a banned id.
    const model = await NativeModel.load(dir, { precision: 'fast' });
    const [fast, exact] = [model.createSequence(), model.createSequence()];
    const tolerance = PRECISION_BOUNDS.fast.logits.steps;
    let close = 0;
    let worstLogprob = 0;
    input = Int32Array.from(PROMPT);
    for (let step = 0; step < STEPS; step++) {
      const banned = step % 4 === 3 ? Int32Array.of(ids[step]) : undefined;
      const [one] = await model.forward([{ sequence: fast, ids: input, logits: false, banned }]);
      const [reference] = await model.forward([{ sequence: exact, ids: input, logits: true, banned }]);
      const logits = reference.logits!;
      assert.equal(one.best, reference.best, `step ${step}: the fast head chose ${one.best}, the exact head ${reference.best}`);
      const scale = logits.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      if (Math.abs(logits[ids[step]] - logits[rivals[step]]) < 1e-3 * scale) close++;
      const apart = Math.abs(one.logprob - reference.logprob);
      assert.ok(apart <= 2 * tolerance * scale, `step ${step}: log-probability ${one.logprob} against ${reference.logprob}`);
      worstLogprob = Math.max(worstLogprob, apart);
      input = Int32Array.of(ids[step]);
    }
    fast.release();
    exact.release();
    // The rivals must really be close, or the test would show nothing.
    assert.ok(close >= STEPS / 2, `only ${close} of ${STEPS} steps had their rival within 1e-3 of the largest logit`);
    t.diagnostic(`${close} of ${STEPS} steps with the rival within 1e-3 of the largest logit; log-probabilities at most ${worstLogprob.toExponential(2)} apart`);
  });
});
