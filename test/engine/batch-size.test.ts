// How many pages decode together: `--batch N` as given, `auto` on the CPU, `auto` on a GPU planned
// from its memory (and the table of that plan in docs/engine.md), and the option's parsing.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';

import { parseCommandLine } from '../../src/cli/command-line.js';
import { BATCH_OPTION } from '../../src/cli/engine-options.js';
import { UsageError } from '../../src/cli/usage.js';
import { AUTO_CPU_BATCH, GPU_BATCH_CAP, parseBatchSize, planGpuBatch, plannedPageCacheBytes, resolveBatchSize } from '../../src/engine/batch-size.js';
import { ACTIVATION_RESERVE_BYTES, kvSlotBytes } from '../../src/engine/device-memory.js';
import { parseModelConfig } from '../../src/engine/model-config.js';
import { DEFAULT_KV_CACHE } from '../../src/engine/native-model.js';
import { modelConfig } from '../../src/model/synth/model-configs.js';
import { elementCount, tensorManifest } from '../../src/model/synth/tensor-manifest.js';
import { VARIANTS, type Variant } from '../../src/vocabulary/ocr-vocabulary.js';

const GIB = 2 ** 30;
const fullConfig = (variant: Variant) => parseModelConfig(modelConfig(variant, 'full') as unknown as Record<string, unknown>);
const v1 = fullConfig('v1');
const cpuModel = { config: v1, kvCache: DEFAULT_KV_CACHE, deviceMemory: null };

describe('batch size', () => {
  test('a given size is used as given, on any backend', () => {
    assert.deepEqual(resolveBatchSize(12, cpuModel), { size: 12, why: 'given' });
    assert.deepEqual(resolveBatchSize(12, { ...cpuModel, deviceMemory: { budgetBytes: GIB, usedBytes: 0 } }), { size: 12, why: 'given' });
  });

  test('auto is 32 on the CPU, with the reason the worker logs', () => {
    assert.equal(resolveBatchSize('auto', cpuModel), AUTO_CPU_BATCH);
    assert.equal(AUTO_CPU_BATCH.size, 32);
  });

  test('auto on a GPU: the planned pages whose caches fit beside the weights and the reserve, from 1 to the cap', () => {
    const page = plannedPageCacheBytes(v1, 'f16');
    // 903 image tokens and 16 of text, 1,000 generated: 1,919 slots, bound max(1,919 + 256, 1.5 × 1,919) = 2,879 slots.
    assert.equal(page, 2879 * kvSlotBytes(v1.decoder, 'f16'));
    const memory = (cachesThatFit: number) => ({ budgetBytes: 10 * GIB + ACTIVATION_RESERVE_BYTES + cachesThatFit * page, usedBytes: 10 * GIB });
    assert.equal(planGpuBatch(memory(40), page).size, 40);
    assert.equal(planGpuBatch({ ...memory(40), budgetBytes: memory(40).budgetBytes - 1 }, page).size, 39);
    assert.equal(planGpuBatch(memory(1000), page).size, GPU_BATCH_CAP);
    assert.match(planGpuBatch(memory(1000), page).why, /holds the KV caches of 1000 planned pages .*, capped at 256; memory admits each page$/);
    const none = planGpuBatch({ budgetBytes: 8 * GIB, usedBytes: 7 * GIB }, page);
    assert.equal(none.size, 1);
    assert.match(none.why, /^auto: 0\.0 GiB of device memory left .* 0 planned pages .*, so 1;/);
    const gpuModel = { config: v1, kvCache: DEFAULT_KV_CACHE, deviceMemory: memory(12) };
    assert.equal(resolveBatchSize('auto', gpuModel).size, 12);
  });

  test('docs/engine.md tables the plan for the real models on 16, 24, 48 and 80 GiB GPUs as the code computes it', async () => {
    const engineDoc = await readFile(new URL('../../../docs/engine.md', import.meta.url), 'utf8');
    for (const variant of VARIANTS) {
      const raw = modelConfig(variant, 'full');
      const weights = tensorManifest(raw).reduce((sum, tensor) => sum + 2 * elementCount(tensor), 0);
      const page = plannedPageCacheBytes(fullConfig(variant), DEFAULT_KV_CACHE);
      const batches = [16, 24, 48, 80].map((gib) => planGpuBatch({ budgetBytes: 0.9 * gib * GIB, usedBytes: weights }, page).size);
      const row = `| ${variant.toUpperCase()} | ${(weights / GIB).toFixed(2)} GiB | ${(page / 2 ** 20).toFixed(1)} MiB | ${batches.join(' | ')} |`;
      assert.ok(engineDoc.includes(row), `docs/engine.md should have the row ${row}`);
    }
  });

  test('the text of --batch is a positive integer or auto', () => {
    assert.equal(parseBatchSize('auto'), 'auto');
    assert.equal(parseBatchSize('16'), 16);
    for (const text of ['0', '-2', '1.5', 'Auto', '', '08']) assert.equal(parseBatchSize(text), undefined, text);
  });

  test('--batch defaults to auto; anything else is a usage error naming the option', () => {
    const batch = (args: string[]) => parseCommandLine(args, { batch: BATCH_OPTION }).options.batch;
    assert.equal(batch([]), 'auto');
    assert.equal(batch(['--batch', '4']), 4);
    assert.throws(() => batch(['--batch', 'many']), (error: unknown) => error instanceof UsageError && /--batch must be a positive integer or auto \(got "many"\)/.test(error.message));
  });
});
