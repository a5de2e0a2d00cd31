// Tiny synthetic checkpoints shared by the test files: written once per variant and seed into the
// temp directory (renamed into place when complete) and reused by later test processes.
import { existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import type { Variant } from '../../src/engine/model-config.js';
import { synthCheckpoint } from '../../src/engine/synth/synth-checkpoint.js';

const FORMAT = 2; // bump when the synthetic layout changes so stale caches are not reused

export async function tinyCheckpoint(variant: Variant, seed = 1): Promise<string> {
  const dir = path.join(os.tmpdir(), `scriptorium-test-tiny-${variant}-s${seed}-f${FORMAT}`);
  if (existsSync(path.join(dir, 'config.json'))) return dir;
  const partial = `${dir}.partial-${process.pid}`;
  await synthCheckpoint({ variant, size: 'tiny', outDir: partial, seed });
  await rm(dir, { recursive: true, force: true });
  await rename(partial, dir);
  return dir;
}
