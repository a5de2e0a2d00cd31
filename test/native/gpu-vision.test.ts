// Whole pages with the vision encoders on the Vulkan backend (llvmpipe in CI) against the CPU engine on
// tiny checkpoints: the assembled vision embeddings (and, where asked, SAM's and CLIP's or Qwen2's
// outputs of every view) within 1e-3 of their largest value, prefill logits within 1e-3 of the largest
// logit, and greedy ids equal at every step whose two best logits are not a near-tie (both engines
// teacher-forced on the CPU's ids).
// Skipped where the GPU backend is absent, unless SCRIPTORIUM_REQUIRE_VULKAN=1 makes that a failure.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { RgbImage } from '../../src/documents/rgb-image.js';
import { gpuBackendReport } from '../../src/engine/compute-device.js';
import type { OcrTask, Variant, VisionMode } from '../../src/vocabulary/ocr-vocabulary.js';
import type { NativeModel } from '../../src/engine/native-model.js';
import { OcrEngine, type PreparedPrompt } from '../../src/engine/ocr-engine.js';
import { maxAbs, maxAbsDiff, RELATIVE_TOLERANCE } from '../support/compare-with-reference.js';
import { syntheticPage } from '../support/synthetic-images.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const STEPS = 8;
const report = await gpuBackendReport();
const skip = report.available || process.env.SCRIPTORIUM_REQUIRE_VULKAN === '1' ? false : `no GPU backend: ${report.reason}`;

function assertClose(gpu: ArrayLike<number>, cpu: ArrayLike<number>, what: string): number {
  assert.equal(gpu.length, cpu.length, `${what}: lengths differ`);
  const error = maxAbsDiff(gpu, cpu);
  const tolerance = RELATIVE_TOLERANCE * maxAbs(cpu);
  assert.ok(error <= tolerance, `${what}: largest difference ${error} exceeds ${tolerance}`);
  return error / maxAbs(cpu);
}

// The two best logits are closer than the tolerance: either id may win.
function nearTie(logits: Float32Array): boolean {
  let first = -Infinity;
  let second = -Infinity;
  for (const v of logits) {
    if (v > first) [first, second] = [v, first];
    else if (v > second) second = v;
  }
  return first - second <= RELATIVE_TOLERANCE * maxAbs(logits);
}

/** Prefill logits and STEPS teacher-forced greedy steps on both engines; returns the steps compared. */
async function compareDecoding(cpu: NativeModel, gpu: NativeModel, prepared: PreparedPrompt): Promise<number> {
  const prompt = { ids: Int32Array.from(prepared.promptIds), embeds: prepared.visionEmbeds, embedRows: prepared.imagePositions };
  const cpuSeq = cpu.createSequence();
  const gpuSeq = gpu.createSequence();
  let [c] = await cpu.forward([{ sequence: cpuSeq, ...prompt }]);
  const [g] = await gpu.forward([{ sequence: gpuSeq, ...prompt }]);
  assertClose(g.logits!, c.logits!, 'prefill logits');
  let compared = 0;
  let best = g.best;
  for (let step = 0; step <= STEPS; step++) {
    if (!nearTie(c.logits!)) {
      assert.equal(best, c.best, `greedy id ${step}`);
      compared++;
    }
    if (step === STEPS) break;
    const ids = Int32Array.of(c.best);
    [c] = await cpu.forward([{ sequence: cpuSeq, ids }]);
    [{ best }] = await gpu.forward([{ sequence: gpuSeq, ids, logits: false }]);
  }
  return compared;
}

interface Case {
  name: string;
  variant: Variant;
  task: OcrTask;
  mode: VisionMode;
  pages: RgbImage[];
  /** Also compare SAM's and the encoder's (CLIP's or Qwen2's) outputs of every view. */
  intermediates?: boolean;
  /** Image positions the prompt must have: makes sure the page is read with the views the case is about. */
  imageTokens?: number;
}

// V3 base is the first page of the three-page case (V3's vision is V1's), so it has no case of its
// own: each case costs minutes on a software Vulkan device.
const CASES: Case[] = [
  { name: 'V1 base', variant: 'v1', task: 'ocr', mode: 'base', pages: [syntheticPage(800, 1000, 1)], intermediates: true },
  { name: 'V1 gundam, 2×1 tiles', variant: 'v1', task: 'ocr', mode: 'gundam', pages: [syntheticPage(1280, 640, 2)] },
  {
    name: 'V3 three pages in one pass',
    variant: 'v3',
    task: 'parse-multi',
    mode: 'base',
    pages: [syntheticPage(900, 1100, 5), syntheticPage(1000, 700, 6), syntheticPage(600, 900, 7)],
  },
  {
    // SAM, the Qwen2 encoder with its causal-flow queries and the projector: the 1024 global view and
    // two 768 tiles (257 + 2 × 144 image positions).
    name: 'V2 gundam, 2×1 tiles',
    variant: 'v2',
    task: 'ocr',
    mode: 'gundam',
    pages: [syntheticPage(1536, 768, 3)],
    intermediates: true,
    imageTokens: 257 + 2 * 144,
  },
];

describe('whole pages: vision encoders on the GPU backend vs the CPU engine', { skip }, () => {
  const engines = new Map<Variant, Promise<{ cpu: OcrEngine; gpu: OcrEngine }>>();
  const load = (variant: Variant) => {
    if (!engines.has(variant)) {
      engines.set(
        variant,
        tinyCheckpoint(variant).then(async (dir) => ({
          cpu: await OcrEngine.load(dir, { threads: 2 }),
          gpu: await OcrEngine.load(dir, { device: { kind: 'gpu', index: 0 } }),
        })),
      );
    }
    return engines.get(variant)!;
  };

  for (const c of CASES) {
    test(`${c.name}: vision embeddings, prefill logits and ${STEPS} greedy steps agree`, async (t) => {
      const { cpu, gpu } = await load(c.variant);
      assert.equal(gpu.model.visionOnDevice, true);
      const expected = await cpu.prepare(c.pages, c.task, c.mode, c.intermediates);
      const got = await gpu.prepare(c.pages, c.task, c.mode, c.intermediates);
      assert.deepEqual(got.promptIds, expected.promptIds);
      if (c.imageTokens !== undefined) assert.equal(expected.imagePositions.length, c.imageTokens);
      const relative = assertClose(got.visionEmbeds, expected.visionEmbeds, 'vision embeddings');
      if (c.intermediates) {
        const encoder = c.variant === 'v2' ? 'Qwen2' : 'CLIP';
        got.pages.forEach((page, i) => {
          const views = { global: [page.global, expected.pages[i].global], tiles: [page.tiles, expected.pages[i].tiles] };
          for (const [name, [gpuViews, cpuViews]] of Object.entries(views)) {
            if (!cpuViews) continue;
            assert.deepEqual(gpuViews!.samShape, cpuViews.samShape);
            assertClose(gpuViews!.sam!, cpuViews.sam!, `page ${i} ${name} SAM features`);
            assertClose(gpuViews!.encoder!, cpuViews.encoder!, `page ${i} ${name} ${encoder} output`);
          }
        });
      }
      const compared = await compareDecoding(cpu.model, gpu.model, expected);
      assert.ok(compared > STEPS / 2, `only ${compared} steps were free of near-ties`);
      t.diagnostic(`vision embeddings within ${relative.toExponential(2)} of their largest value; ${compared} greedy ids compared`);
    });
  }

  test('a view side the encoder cannot take is refused by the GPU encoder as by the CPU one', async () => {
    const { gpu } = await load('v1');
    await assert.rejects(gpu.model.encodeImages(new Float32Array(3 * 40 * 40), 1, 40), /view side must be a positive multiple of 16/);
    const side = 64;
    const ok = await gpu.model.encodeImages(new Float32Array(3 * side * side), 1, side);
    assert.equal(ok.tokensPerView, 1);
  });

  test('V2: a view side without learned queries is refused by the GPU encoder as by the CPU one', async () => {
    const { gpu } = await load('v2');
    await assert.rejects(gpu.model.encodeImages(new Float32Array(3 * 64 * 64), 1, 64), /DeepSeek-OCR-2 encodes only 768 or 1024-pixel views/);
  });
});
