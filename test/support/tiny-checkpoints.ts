// Tiny (and wide) synthetic checkpoints shared by the test files: written once per variant, seed and storage
// form into the temp directory (renamed into place when complete) and reused by later test processes.
import { existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import type { Variant } from '../../src/vocabulary/ocr-vocabulary.js';
import { synthCheckpoint, type SynthCheckpointOptions } from '../../src/model/synth/synth-checkpoint.js';

const FORMAT = 2; // bump when the synthetic layout changes so stale caches are not reused

/**
 * How the same values are stored: as published (BF16), every weight in F32 or F16, norms in F32 and
 * the rest BF16, or BF16 plus the int64 position_ids buffer re-saved copies carry.
 */
export type CheckpointForm = 'bf16' | 'f32' | 'f16' | 'norms-f32' | 'position-ids';

/** The weights of normalisation layers (RMSNorm, LayerNorm, SAM's LayerNorm2d in the neck). */
export const isNormTensor = (name: string) => /(norm\d?|layrnorm|layernorm|neck\.[13])\.(weight|bias)$/.test(name);

const FORMS: Record<CheckpointForm, Pick<SynthCheckpointOptions, 'dtypeOf' | 'positionIds'>> = {
  bf16: {},
  f32: { dtypeOf: () => 'F32' },
  f16: { dtypeOf: () => 'F16' },
  'norms-f32': { dtypeOf: (name) => (isNormTensor(name) ? 'F32' : 'BF16') },
  'position-ids': { positionIds: true },
};

export async function tinyCheckpoint(variant: Variant, seed = 1, form: CheckpointForm = 'bf16'): Promise<string> {
  const suffix = form === 'bf16' ? '' : `-${form}`;
  const dir = path.join(os.tmpdir(), `scriptorium-test-tiny-${variant}-s${seed}-f${FORMAT}${suffix}`);
  if (existsSync(path.join(dir, 'config.json'))) return dir;
  const partial = `${dir}.partial-${process.pid}`;
  await synthCheckpoint({ variant, size: 'tiny', outDir: partial, seed, ...FORMS[form] });
  await rm(dir, { recursive: true, force: true });
  await rename(partial, dir);
  return dir;
}

/**
 * The synthetic 'wide' checkpoint of a variant (official decoder widths, two layers, eight experts:
 * an embedding and a vocabulary head of 316 MiB each), written once into the temp directory like the tiny ones.
 */
export async function wideCheckpoint(variant: Variant, seed = 1): Promise<string> {
  const dir = path.join(os.tmpdir(), `scriptorium-test-wide-${variant}-s${seed}-f${FORMAT}`);
  if (existsSync(path.join(dir, 'config.json'))) return dir;
  const partial = `${dir}.partial-${process.pid}`;
  await synthCheckpoint({ variant, size: 'wide', outDir: partial, seed });
  await rm(dir, { recursive: true, force: true });
  await rename(partial, dir);
  return dir;
}
