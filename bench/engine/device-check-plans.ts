// The device check's plans (native/device_check/device_check.cc reads them on a GPU machine that has
// no Node.js): for V1 and V3 at the tiny and the full size, the synthetic checkpoint's tensors, the
// dims, the timed cases with the work each does (work-counts.ts), and for the tiny models a check
// with the CPU engine's results computed here (<plan>.reference.bin). Run by build.sh:
//
//   node dist/bench/engine/device-check-plans.js OUT_DIR DEVICE_CHECK_PROGRAM
//
// It also has the program write each tiny checkpoint and fails unless every tensor is bitwise the
// TypeScript generator's: the references hold only where the two generators agree.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { imageTokenCount } from '../../src/engine/image-tokens.js';
import { parseModelConfig, type DecoderDims } from '../../src/engine/model-config.js';
import { NativeModel } from '../../src/engine/native-model.js';
import type { Precision } from '../../src/engine/precision.js';
import { buildPromptIds, promptText } from '../../src/engine/prompts.js';
import { Tokenizer } from '../../src/engine/tokenizer.js';
import { parseVisionDims, type VisionDims } from '../../src/engine/vision-config.js';
import { modelConfig, type ModelSize } from '../../src/model/synth/model-configs.js';
import { synthCheckpoint } from '../../src/model/synth/synth-checkpoint.js';
import { tensorManifest } from '../../src/model/synth/tensor-manifest.js';
import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import { seededRandom } from '../../test/support/seeded-random.js';
import { decodeRunBytes, encodeFlops, KV_ELEMENT_BYTES, prefillFlops, totalFlops } from './work-counts.js';

const SEED = 1;
/** The sizes planned: tiny (the check, and brief timings) and full (the timings that count). */
type PlanSize = Extract<ModelSize, 'tiny' | 'full'>;
const SIZES: readonly PlanSize[] = ['tiny', 'full'];
const VARIANTS: readonly Variant[] = ['v1', 'v3'];
/** The check's prompt length and the greedy ids it compares (the first one from the prefill). */
const CHECK_PROMPT_TOKENS = 24;
const CHECK_STEPS = 16;
/** The reference file's precisions, in the order device_check.cc reads them. */
const REFERENCE_PRECISIONS: readonly Precision[] = ['exact', 'fast'];
/** Decode steps run before the timed ones (the first calls make the batch's buffers). */
const WARM_UP_STEPS = 2;

/** A case as device_check.cc reads it. */
type Case =
  | { kind: 'encode'; name: string; views: Views; flops: number }
  | { kind: 'prefill'; name: string; tokens: number; imageTokens: number; flops: number }
  | { kind: 'decode'; name: string; batch: number; prompt: number; warmup: number; steps: number; bytes: number };

/** One vision encode's views: (side, count) per call. */
type Views = { side: number; count: number }[];
const BASE_PAGE: Views = [{ side: 1024, count: 1 }];
const GUNDAM_PAGE: Views = [{ side: 1024, count: 1 }, { side: 640, count: 6 }];
const GUNDAM_TILE: Views = [{ side: 640, count: 1 }];

/**
 * What each size times: the full size the pages and batches a GPU worker runs, the tiny one a
 * little of each (CI runs it on a CPU's software Vulkan, where a 1024 view of even the tiny encoder
 * takes half a minute). `runs`: timed runs of an encode or a prefill, after one warm-up run.
 */
const TIMING = {
  tiny: { encodes: [['a gundam tile', GUNDAM_TILE]], batches: [1, 8], steps: 4, longPrefixPages: 3, runs: 1 },
  full: { encodes: [['a base page', BASE_PAGE], ['a gundam page', GUNDAM_PAGE]], batches: [1, 8, 32, 64], steps: 16, longPrefixPages: 30, runs: 3 },
} as const satisfies Record<PlanSize, { encodes: readonly (readonly [string, Views])[]; batches: readonly number[]; steps: number; longPrefixPages: number; runs: number }>;

async function main([outDir, program]: string[]): Promise<void> {
  if (!outDir || !program) throw new Error('usage: device-check-plans OUT_DIR DEVICE_CHECK_PROGRAM');
  await mkdir(outDir, { recursive: true });
  const work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-device-check-'));
  try {
    for (const variant of VARIANTS) {
      // The tiny checkpoint: the CPU engine's reference is computed on it, and its tokenizer counts the prompts.
      const tiny = path.join(work, `tiny-${variant}`);
      await synthCheckpoint({ variant, size: 'tiny', outDir: tiny, seed: SEED });
      const tokenizer = await Tokenizer.fromDir(tiny);
      for (const size of SIZES) {
        const name = `${size}-${variant}`;
        const config = modelConfig(variant, size);
        const parsed = parseModelConfig(config as unknown as Record<string, unknown>);
        const vision = parseVisionDims(parsed);
        const plan: Record<string, unknown> = {
          name,
          seed: SEED,
          runs: TIMING[size].runs,
          tensors: tensorManifest(config).map(({ name: tensor, shape, init }) => ({ name: tensor, shape, mean: init.mean, std: init.std })),
          decoder: parsed.decoder,
          ...(vision ? { vision } : {}),
          cases: timedCases(variant, size, parsed.decoder, vision, tokenizer, parsed.bosId),
        };
        if (size === 'tiny') {
          const prompt = checkPrompt(parsed.decoder.vocab);
          plan.check = { prompt, steps: CHECK_STEPS, reference: `${name}.reference.bin` };
          await writeFile(path.join(outDir, `${name}.reference.bin`), await cpuReference(tiny, prompt));
        }
        const planFile = path.join(outDir, `${name}.json`);
        await writeFile(planFile, JSON.stringify(plan));
        if (size === 'tiny') await compareWithProgram(program, planFile, tiny, path.join(work, `native-${name}`));
        process.stdout.write(`wrote ${planFile}\n`);
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

function timedCases(variant: Variant, size: PlanSize, d: DecoderDims, vision: VisionDims | null, tokenizer: Tokenizer, bosId: number): Case[] {
  const { batches, steps, longPrefixPages } = TIMING[size];
  const task = variant === 'v3' ? 'parse' : 'markdown';
  const pageTokens = imageTokenCount(variant, 'base', [1, 1]);
  const page = buildPromptIds(tokenizer, bosId, promptText(variant, task), [pageTokens]);
  // The engine replaces the image rows' embeddings: they follow BOS in both prompts.
  if (page.imagePositions[0] !== 1 || page.imagePositions.at(-1) !== pageTokens) throw new Error(`${variant}: the page's image rows are not 1 to ${pageTokens}`);
  const cases: Case[] = [];
  if (vision && variant === 'v1') {
    for (const [what, views] of TIMING[size].encodes) {
      const flops = views.reduce((sum, { side, count }) => {
        const { sam, encoder, projector } = encodeFlops(vision, side, count);
        return sum + totalFlops(sam) + totalFlops(encoder) + totalFlops(projector);
      }, 0);
      const described = views.map(({ side, count }) => `${count} ${count === 1 ? 'view' : 'views'} of ${side}`).join(', ');
      cases.push({ kind: 'encode', name: `encode ${what} (${described})`, views: [...views], flops });
    }
  }
  cases.push({ kind: 'prefill', name: `prefill a base page (${page.ids.length} tokens)`, tokens: page.ids.length, imageTokens: pageTokens, flops: totalFlops(prefillFlops(d, page.ids.length)) });
  const decode = (batch: number, prompt: number, what: string): Case => {
    const options = { kvElementBytes: KV_ELEMENT_BYTES.f16 };
    const bytes = decodeRunBytes(d, batch, prompt, WARM_UP_STEPS + steps, options) - decodeRunBytes(d, batch, prompt, WARM_UP_STEPS, options);
    return { kind: 'decode', name: `decode batch ${batch} after ${what}`, batch, prompt, warmup: WARM_UP_STEPS, steps, bytes };
  };
  if (variant === 'v1') for (const batch of batches) cases.push(decode(batch, page.ids.length, `a base page (${page.ids.length} tokens)`));
  else {
    const multi = buildPromptIds(tokenizer, bosId, promptText('v3', 'parse-multi'), Array(longPrefixPages).fill(pageTokens)).ids.length;
    for (const batch of [1, 8]) cases.push(decode(batch, multi, `${longPrefixPages} pages in one prompt (${multi} tokens)`));
  }
  return cases;
}

/** The check's prompt: seeded ids across the vocabulary. */
function checkPrompt(vocab: number): number[] {
  const random = seededRandom(SEED);
  return Array.from({ length: CHECK_PROMPT_TOKENS }, () => Math.floor(random() * vocab));
}

/**
 * The CPU engine's results on `dir` with half KV caches (the GPU's default), per precision: the
 * prefill's logits (F32), then for each greedy id (the first from the prefill) the id, the gap
 * between its logit and the second best, and the largest |logit|, as int32, F32, F32.
 */
async function cpuReference(dir: string, prompt: readonly number[]): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (const precision of REFERENCE_PRECISIONS) {
    const model = await NativeModel.load(dir, { device: { kind: 'cpu' }, precision, kvCache: 'f16', threads: 2 });
    const sequence = model.createSequence();
    const steps = Buffer.alloc(CHECK_STEPS * 12);
    let ids = Int32Array.from(prompt);
    for (let step = 0; step < CHECK_STEPS; step++) {
      const [{ best, logits }] = await model.forward([{ sequence, ids, logits: true }]);
      if (step === 0) parts.push(Buffer.from(logits!.buffer, logits!.byteOffset, logits!.byteLength));
      const { gap, largest } = topGap(logits!);
      steps.writeInt32LE(best, step * 12);
      steps.writeFloatLE(gap, step * 12 + 4);
      steps.writeFloatLE(largest, step * 12 + 8);
      ids = Int32Array.of(best);
    }
    parts.push(steps);
  }
  return Buffer.concat(parts);
}

function topGap(logits: Float32Array): { gap: number; largest: number } {
  let first = -Infinity, second = -Infinity, largest = 0;
  for (const value of logits) {
    if (value > first) [first, second] = [value, first];
    else if (value > second) second = value;
    largest = Math.max(largest, Math.abs(value));
  }
  return { gap: first - second, largest };
}

/** Has the program write the plan's checkpoint and compares it tensor by tensor with the TypeScript one in `dir`. */
async function compareWithProgram(program: string, planFile: string, dir: string, nativeDir: string): Promise<void> {
  await promisify(execFile)(program, ['write-checkpoint', planFile, nativeDir]);
  const [want, got] = await Promise.all([checkpointTensors(dir), checkpointTensors(nativeDir)]);
  if (want.size !== got.size) throw new Error(`${planFile}: the program wrote ${got.size} tensors where the TypeScript generator writes ${want.size}`);
  for (const [name, bytes] of want) {
    const other = got.get(name);
    if (!other || !bytes.equals(other)) throw new Error(`${planFile}: tensor ${name} differs from the TypeScript generator's`);
  }
  await rm(nativeDir, { recursive: true, force: true });
}

/** Each tensor's bytes in a checkpoint folder: its one model.safetensors, or the shards its index names. */
async function checkpointTensors(dir: string): Promise<Map<string, Buffer>> {
  const index = await readFile(path.join(dir, 'model.safetensors.index.json'), 'utf8').catch(() => undefined);
  const files = index ? [...new Set(Object.values((JSON.parse(index) as { weight_map: Record<string, string> }).weight_map))] : ['model.safetensors'];
  const tensors = new Map<string, Buffer>();
  for (const file of files) {
    const data = await readFile(path.join(dir, file));
    const headerBytes = Number(data.readBigUInt64LE(0));
    const header = JSON.parse(data.subarray(8, 8 + headerBytes).toString('utf8')) as Record<string, { data_offsets?: [number, number] }>;
    for (const [name, { data_offsets: offsets }] of Object.entries(header)) {
      if (offsets) tensors.set(name, data.subarray(8 + headerBytes + offsets[0], 8 + headerBytes + offsets[1]));
    }
  }
  return tensors;
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`device-check-plans: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
