// Which checkpoint a command runs when none is named: --model, else $SCRIPTORIUM_MODEL, else a tiny
// synthetic checkpoint generated once into the user's cache directory, announced as such.
import { access, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { synthCheckpoint } from '../engine/synth/synth-checkpoint.js';

export interface ResolvedModel {
  dir: string;
  synthetic: boolean;
}

function cacheRoot(): string {
  return process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

export async function resolveModelDir(flag: string | undefined): Promise<ResolvedModel> {
  const named = flag ?? process.env.SCRIPTORIUM_MODEL;
  if (named) return { dir: named, synthetic: false };
  const dir = path.join(cacheRoot(), 'scriptorium', 'synthetic-tiny-v3');
  if (!(await exists(path.join(dir, 'config.json')))) {
    // Written beside and renamed, so an interrupted run never leaves a half checkpoint.
    const partial = `${dir}.partial-${process.pid}`;
    await synthCheckpoint({ variant: 'v3', size: 'tiny', outDir: partial, seed: 0 });
    await rm(dir, { recursive: true, force: true });
    await rename(partial, dir);
  }
  process.stderr.write(
    `scriptorium: no model given (--model or SCRIPTORIUM_MODEL): using a SYNTHETIC tiny V3 checkpoint with random weights at ${dir}; its output is meaningless text\n`,
  );
  return { dir, synthetic: true };
}
