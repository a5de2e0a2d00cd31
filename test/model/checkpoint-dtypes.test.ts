// Checkpoints as users have them: the same tiny V1 weights stored in F32, in F16, with norms in F32,
// and with an extra int64 position_ids buffer. Each loads, and `debug dump` of a page gives what the
// BF16 checkpoint gives: bitwise where the stored values are exactly the BF16 ones (F32 widening,
// the extra buffer), and within the reference tolerance for F16 (which rounds values below 2^-14).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { debugDump, type Dump } from '../../src/model/debug-dump.js';
import { loadModelConfig } from '../../src/engine/model-config.js';
import { nativeBinding } from '../../src/engine/native-binding.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { parseVisionDims } from '../../src/engine/vision-config.js';
import { maxAbs, maxAbsDiff, RELATIVE_TOLERANCE } from '../support/compare-with-reference.js';
import { syntheticPage } from '../support/synthetic-images.js';
import { tinyCheckpoint, type CheckpointForm } from '../support/tiny-checkpoints.js';

const PAGE = syntheticPage(500, 400, 4);

async function pageDump(form: CheckpointForm): Promise<Dump> {
  return debugDump({ modelDir: await tinyCheckpoint('v1', 1, form), images: [PAGE], task: 'ocr', mode: 'small', steps: 6, intermediates: true, threads: 2 });
}

let bf16Dump: Promise<Dump> | undefined;
const reference = () => (bf16Dump ??= pageDump('bf16'));

function bytesOf(data: Float32Array | Int32Array): Buffer {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

function assertBitwiseEqual(got: Dump, want: Dump): void {
  assert.deepEqual(Object.keys(got.tensors).sort(), Object.keys(want.tensors).sort());
  for (const [name, tensor] of Object.entries(want.tensors)) {
    assert.deepEqual(got.tensors[name].shape, tensor.shape, name);
    assert.ok(bytesOf(got.tensors[name].data).equals(bytesOf(tensor.data)), `${name} differs`);
  }
}

for (const form of ['f32', 'norms-f32', 'position-ids'] as const) {
  test(`a ${form} checkpoint gives bitwise the BF16 checkpoint's page dump`, async () => {
    assertBitwiseEqual(await pageDump(form), await reference());
  });
}

test('an F16 checkpoint gives the BF16 checkpoint\'s page within the reference tolerance', async () => {
  const [got, want] = await Promise.all([pageDump('f16'), reference()]);
  for (const name of ['vision_embeds', 'prefill_logits']) {
    const expected = want.tensors[name].data as Float32Array;
    const error = maxAbsDiff(got.tensors[name].data as Float32Array, expected);
    assert.ok(error <= RELATIVE_TOLERANCE * maxAbs(expected), `${name}: max abs error ${error}`);
  }
});

test('F32 weights cost their BF16 copy, BF16 weights nothing; unread buffers are listed', async () => {
  const bf16 = await NativeModel.load(await tinyCheckpoint('v1'), { threads: 1 });
  const f32 = await NativeModel.load(await tinyCheckpoint('v1', 1, 'f32'), { threads: 1 });
  const extra = await NativeModel.load(await tinyCheckpoint('v1', 1, 'position-ids'), { threads: 1 });
  assert.equal(bf16.convertedBytes, 0);
  assert.equal(f32.weightBytes, 2 * bf16.weightBytes);
  // Every matrix becomes a BF16 copy; vectors the engine keeps in F32 anyway (biases, norms, learned
  // vectors, the router) are read as F32 without one.
  assert.ok(f32.convertedBytes > 0.95 * bf16.weightBytes && f32.convertedBytes < bf16.weightBytes, `${f32.convertedBytes} converted bytes`);
  assert.deepEqual(
    extra.unreadTensors.filter((name) => !bf16.unreadTensors.includes(name)),
    ['model.vision_model.embeddings.position_ids'],
  );
});

test('an F32 checkpoint is converted off the event loop: it turns before the load resolves', async () => {
  const dir = await tinyCheckpoint('v1', 1, 'f32');
  const config = await loadModelConfig(dir);
  const order: string[] = [];
  const loading = nativeBinding().loadModel(dir, config.decoder, 1, parseVisionDims(config) ?? undefined, { precision: 'exact' }).then(() => order.push('loaded'));
  await new Promise((resolve) => setImmediate(resolve));
  order.push('event loop turned');
  await loading;
  assert.deepEqual(order, ['event loop turned', 'loaded']);
});
