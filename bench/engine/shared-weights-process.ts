// One worker-like process of the shared-weights part: loads the engine (its packed weights in the
// node folder SCRIPTORIUM_PACKED_WEIGHTS_DIR names, else in its own memory), reads one base page for a few tokens so
// its working memory is in use, tells the parent it is ready, and waits to be told to exit. Started
// by measure-shared-weights.ts, which reads its memory from /proc while it waits.
import { readdir } from 'node:fs/promises';

import { PACKED_WEIGHTS_DIR_VARIABLE } from '../../src/engine/native-model.js';
import { OcrEngine } from '../../src/engine/ocr-engine.js';
import type { Precision } from '../../src/engine/precision.js';
import { pageCase, syntheticPage } from './page-cases.js';

export interface SharedWeightsChildJob {
  modelDir: string;
  threads: number;
  precision: Precision;
  tokens: number;
}

export interface SharedWeightsChildReady {
  loadMs: number;
  /** The load packed the weights and wrote the node's file (no usable file was there). */
  wroteFile: boolean;
}

const PAGE_CASE = 'v1-base';

async function main(job: SharedWeightsChildJob): Promise<void> {
  const folder = process.env[PACKED_WEIGHTS_DIR_VARIABLE];
  const filesBefore = folder === undefined ? [] : await readdir(folder).catch(() => []);
  const started = performance.now();
  // The node folder, if any, comes as a worker's does: SCRIPTORIUM_PACKED_WEIGHTS_DIR.
  const engine = await OcrEngine.load(job.modelDir, { threads: job.threads, precision: job.precision });
  const loadMs = performance.now() - started;
  const spec = pageCase(PAGE_CASE);
  await engine.recognizePages([syntheticPage(spec.pageSize, 1)], { task: spec.task, mode: spec.mode, maxNewTokens: job.tokens });
  const filesAfter = folder === undefined ? [] : await readdir(folder);
  const wroteFile = filesAfter.some((name) => name.endsWith('.bin') && !filesBefore.includes(name));
  process.send!({ loadMs, wroteFile } satisfies SharedWeightsChildReady);
  process.on('message', () => process.exit(0));
}

main(JSON.parse(process.argv[2]) as SharedWeightsChildJob).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
