// The file `model synth` leaves in every checkpoint it writes, so that any command given that folder
// (with --model, SCRIPTORIUM_MODEL or from S3) knows its weights are random and says so in its logs
// and results.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

import type { Variant } from '../../vocabulary/ocr-vocabulary.js';
import type { ModelSize } from './model-configs.js';

export const SYNTHETIC_MARKER_FILE = 'scriptorium-synthetic.json';

export interface SyntheticMarker {
  synthetic: true;
  variant: Variant;
  size: ModelSize;
  seed: number;
}

export async function writeSyntheticMarker(dir: string, marker: Omit<SyntheticMarker, 'synthetic'>): Promise<void> {
  const body: SyntheticMarker = { synthetic: true, ...marker };
  await writeFile(path.join(dir, SYNTHETIC_MARKER_FILE), `${JSON.stringify(body, null, 2)}\n`);
}

/** Whether `dir` holds the marker of a synthetic checkpoint (a marker that is no JSON still counts). */
export async function isSyntheticCheckpoint(dir: string): Promise<boolean> {
  try {
    await readFile(path.join(dir, SYNTHETIC_MARKER_FILE));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}
