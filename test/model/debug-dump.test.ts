// The debug dump contract (docs/engine.md "The debug dump"): tensor names, dtypes and shapes, teacher forcing
// through the real R-SWA decode path, intermediates in the official layouts, metadata.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import sharp from 'sharp';

import { debugDump } from '../../src/model/debug-dump.js';
import { IMAGE_TOKEN_ID } from '../../src/engine/prompts.js';
import { ReferenceDecoder } from '../reference/reference-decoder.js';
import { ReferenceVision } from '../reference/vision-reference.js';
import { greedyReference } from '../reference/reference-generate.js';
import { maxAbs, maxAbsDiff, RELATIVE_TOLERANCE } from '../support/compare-with-reference.js';
import { syntheticPage } from '../support/synthetic-images.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

interface ParsedTensor {
  dtype: string;
  shape: number[];
  values: Float32Array | Int32Array;
}

/** Reads a safetensors file written by the dump (F32 / I32 only). */
async function readDump(file: string): Promise<{ tensors: Record<string, ParsedTensor>; metadata: Record<string, string> }> {
  const bytes = await readFile(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  assert.equal((8 + headerLength) % 8, 0, 'data section is 8-byte aligned');
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8'));
  const data = bytes.subarray(8 + headerLength);
  const tensors: Record<string, ParsedTensor> = {};
  for (const [name, entry] of Object.entries<any>(header)) {
    if (name === '__metadata__') continue;
    const [begin, end] = entry.data_offsets;
    const copy = new Uint8Array(data.subarray(begin, end)).buffer;
    tensors[name] = { dtype: entry.dtype, shape: entry.shape, values: entry.dtype === 'I32' ? new Int32Array(copy) : new Float32Array(copy) };
  }
  return { tensors, metadata: header.__metadata__ };
}

const cli = path.resolve('dist/src/cli/main.js');
let work: string;

before(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-dump-'));
});

after(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('debug dump of a text prompt', () => {
  test('the command writes the five tensors with the documented dtypes and shapes', async () => {
    const dir = await tinyCheckpoint('v1');
    const out = path.join(work, 'text.safetensors');
    await promisify(execFile)(process.execPath, [cli, 'debug', 'dump', '--model', dir, '--prompt', '  Hello world  ', '--steps', '5', '--out', out]);
    const { tensors, metadata } = await readDump(out);
    assert.deepEqual(
      Object.fromEntries(Object.entries(tensors).map(([name, t]) => [name, `${t.dtype}[${t.shape}]`])),
      {
        input_ids: 'I32[3]',
        prefill_logits: 'F32[129280]',
        generated_ids: 'I32[5]',
        step_topk_ids: 'I32[5,8]',
        step_topk_logits: 'F32[5,8]',
      },
    );
    assert.equal(tensors.input_ids.values[0], 0, 'BOS first');
    assert.equal(metadata.variant, 'v1');
    assert.equal(metadata.activation_precision, 'f32');
    assert.match(metadata.kernels, /^(avx512bf16|avx512|avx2|scalar)$/);
  });

  test('free-running: generated ids are each step top-1, and row 0 ranks the prefill logits', async () => {
    const dump = await debugDump({ modelDir: await tinyCheckpoint('v1'), prompt: 'Free OCR.', steps: 12 });
    const ids = dump.tensors.step_topk_ids.data;
    const logits = dump.tensors.step_topk_logits.data;
    for (let step = 0; step < 12; step++) {
      assert.equal(ids[step * 8], dump.tensors.generated_ids.data[step]);
      for (let k = 1; k < 8; k++) assert.ok(logits[step * 8 + k] <= logits[step * 8 + k - 1], 'best first');
    }
    const prefill = dump.tensors.prefill_logits.data as Float32Array;
    assert.equal(logits[0], prefill.reduce((a, b) => Math.max(a, b), -Infinity));
  });

  test('--quantize int8 dumps the int8 engine: its metadata says so, and its prefill logits stay within the int8 bound of the float64 reference', async () => {
    const dir = await tinyCheckpoint('v1');
    const out = path.join(work, 'int8.safetensors');
    await promisify(execFile)(process.execPath, [cli, 'debug', 'dump', '--model', dir, '--prompt', 'Free OCR.', '--steps', '2', '--quantize', 'int8', '--out', out]);
    const { tensors, metadata } = await readDump(out);
    assert.match(metadata.weight_precision, /^int8 experts and vocabulary head/);
    assert.match(metadata.backend, /\+int8$/);
    const promptIds = [...tensors.input_ids.values];
    const expected = greedyReference(ReferenceDecoder.load(dir), promptIds, 1, { topk: 1 });
    const prefill = tensors.prefill_logits.values as Float32Array;
    const exact = (await debugDump({ modelDir: dir, prompt: 'Free OCR.', steps: 2 })).tensors.prefill_logits.data as Float32Array;
    const scale = maxAbs(expected.prefillLogits);
    // The int8 bound of test/native/quantize-int8.test.ts; and int8 really is another engine than BF16.
    assert.ok(maxAbsDiff(prefill, expected.prefillLogits) <= 2e-2 * scale, `${maxAbsDiff(prefill, expected.prefillLogits)} > ${2e-2 * scale}`);
    assert.ok(maxAbsDiff(prefill, exact) > 0, 'the int8 dump differs from the BF16 one');
  });

  test('V3 teacher-forced past the 128-token window matches the reference step by step', async () => {
    const dir = await tinyCheckpoint('v3');
    const forceIds = Array.from({ length: 150 }, (_, i) => 500 + ((i * 7919) % 60000));
    const dump = await debugDump({ modelDir: dir, prompt: 'document parsing.', steps: 0, forceIds });
    assert.equal(dump.metadata.decode, 'teacher-forced');
    assert.equal(dump.metadata.attention, 'r-swa window 128');
    assert.deepEqual([...dump.tensors.generated_ids.data], forceIds);
    const promptIds = [...dump.tensors.input_ids.data];
    const expected = greedyReference(ReferenceDecoder.load(dir), promptIds, forceIds.length, { forceIds, topk: 1 });
    const tolerance = RELATIVE_TOLERANCE * maxAbs(expected.prefillLogits);
    const logits = dump.tensors.step_topk_logits.data;
    for (let step = 0; step < forceIds.length; step++) {
      const error = Math.abs(logits[step * 8] - expected.topk[step].logits[0]);
      assert.ok(error <= tolerance, `step ${step}: top logit off by ${error}`);
    }
  });

  test('--variant v3 on a V1 checkpoint runs the R-SWA path', async () => {
    const dump = await debugDump({ modelDir: await tinyCheckpoint('v1'), prompt: 'x', steps: 2, variant: 'v3' });
    assert.equal(dump.metadata.variant, 'v3');
    assert.equal(dump.metadata.attention, 'r-swa window 128');
  });
});

describe('debug dump of page images', () => {
  test('V1 gundam: image ids expanded, vision_embeds [K, hidden], intermediates per view in official layouts', async () => {
    const dump = await debugDump({
      modelDir: await tinyCheckpoint('v1'),
      images: [syntheticPage(1280, 640, 2)],
      task: 'ocr',
      mode: 'gundam',
      steps: 2,
      intermediates: true,
    });
    const shapes = Object.fromEntries(Object.entries(dump.tensors).map(([name, t]) => [name, t.shape.join('×')]));
    const K = 273 + 210;
    assert.equal([...dump.tensors.input_ids.data].filter((id) => id === IMAGE_TOKEN_ID).length, K);
    assert.deepEqual(
      { ...shapes, input_ids: undefined, prefill_logits: undefined, generated_ids: undefined, step_topk_ids: undefined, step_topk_logits: undefined },
      {
        input_ids: undefined,
        prefill_logits: undefined,
        generated_ids: undefined,
        step_topk_ids: undefined,
        step_topk_logits: undefined,
        vision_embeds: `${K}×256`,
        pixels_global: '3×1024×1024',
        sam_global: '128×16×16',
        clip_global: '256×128',
        projected_global: '256×256',
        pixels_tiles: '2×3×640×640',
        sam_tiles: '2×128×10×10',
        clip_tiles: '2×100×128',
        projected_tiles: '2×100×256',
      },
    );
    assert.equal(dump.metadata.pixels_rounded_to_bf16, 'true');
  });

  test('intermediates equal the float64 reference encoders on the dumped pixels (V1 small, 640)', async () => {
    const dir = await tinyCheckpoint('v1');
    const dump = await debugDump({ modelDir: dir, images: [syntheticPage(500, 400, 4)], task: 'ocr', mode: 'small', steps: 1, intermediates: true });
    assert.deepEqual(dump.tensors.pixels_global.shape, [3, 640, 640]);
    const expected = ReferenceVision.load(dir).encode(dump.tensors.pixels_global.data as Float32Array, 640);
    for (const [name, reference] of [
      ['sam_global', expected.sam],
      ['clip_global', expected.encoder],
      ['projected_global', expected.projected],
    ] as const) {
      const error = maxAbsDiff(dump.tensors[name].data, reference);
      assert.ok(error <= RELATIVE_TOLERANCE * maxAbs(reference), `${name}: max abs error ${error}`);
    }
  });

  test('pixels are rounded to bfloat16 as the official pipeline casts them', async () => {
    const dump = await debugDump({ modelDir: await tinyCheckpoint('v3'), images: [syntheticPage(300, 400, 3)], mode: 'base', steps: 1, intermediates: true });
    const pixels = dump.tensors.pixels_global.data as Float32Array;
    const bits = new Uint32Array(pixels.buffer, pixels.byteOffset, pixels.length);
    assert.ok(bits.every((b) => (b & 0xffff) === 0), 'every pixel value has a zero low half');
  });

  test('V2 names its encoder outputs qwen2_*', async () => {
    const dump = await debugDump({ modelDir: await tinyCheckpoint('v2'), images: [syntheticPage(700, 700, 3)], steps: 1, intermediates: true });
    assert.deepEqual(dump.tensors.qwen2_global.shape, [256, 128]);
    assert.equal(dump.tensors.clip_global, undefined);
  });

  test('V3 parse-multi: 273 image ids per page and a leading page axis on intermediates', async () => {
    const dir = await tinyCheckpoint('v3');
    const files = await Promise.all(
      [1, 2].map(async (seed) => {
        const page = syntheticPage(500, 700, seed);
        const file = path.join(work, `page${seed}.png`);
        await writeFile(file, await sharp(Buffer.from(page.data), { raw: { width: 500, height: 700, channels: 3 } }).png().toBuffer());
        return file;
      }),
    );
    const out = path.join(work, 'multi.safetensors');
    await promisify(execFile)(process.execPath, [
      cli, 'debug', 'dump', '--model', dir, '--image', files[0], '--image', files[1], '--task', 'parse-multi', '--intermediates', '--steps', '2', '--out', out,
    ]);
    const { tensors, metadata } = await readDump(out);
    assert.equal([...tensors.input_ids.values].filter((id) => id === IMAGE_TOKEN_ID).length, 2 * 273);
    assert.deepEqual(tensors.vision_embeds.shape, [546, 256]);
    assert.deepEqual(tensors.pixels_global.shape, [2, 3, 1024, 1024]);
    assert.deepEqual(tensors.projected_global.shape, [2, 256, 256]);
    assert.equal(metadata.task, 'parse-multi');
    assert.equal(metadata.pages, '2');
  });
});
