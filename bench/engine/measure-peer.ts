// The peer (ds-ocr) and one of our modes side by side in this process: our engine is loaded and
// warmed up (one untimed read of the page brings the vision weights into memory, then the decoder's
// warm-up), the page is written as a PNG for the peer, and every run starts the peer on it (in the
// job that runs the peer) and then reads it with our engine, so both see the same load. Both generate exactly `tokens` tokens greedily; ours without logits processors and without
// stopping at EOS, the peer holding EOS back until then.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import sharp from 'sharp';

import type { RgbImage } from '../../src/documents/rgb-image.js';
import { generate } from '../../src/engine/generate.js';
import { OcrEngine } from '../../src/engine/ocr-engine.js';
import { warmUpDecoder } from './decoder-warm-up.js';
import type { PeerAnswer, PeerJob, PeerMode } from './measure-jobs.js';
import { syntheticPage, type PageCase } from './page-cases.js';
import type { PageStageMs } from './peer-profile.js';
import { runPeer } from './peer-run.js';

async function writePng(image: RgbImage, file: string): Promise<void> {
  await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } }).png().toFile(file);
}

/** One page read by our engine: preprocessing and the vision encoders, prefill, decode. */
async function readPage(engine: OcrEngine, image: RgbImage, spec: PageCase, tokens: number): Promise<PageStageMs> {
  const started = performance.now();
  const prepared = await engine.prepare([image], spec.task, spec.mode);
  const [result] = await generate(engine.model, [
    { promptIds: prepared.promptIds, embeds: { rows: prepared.imagePositions, values: prepared.visionEmbeds }, maxNewTokens: tokens, stopAtEos: false },
  ]);
  const totalMs = performance.now() - started;
  if (result.ids.length !== tokens) throw new Error(`generated ${result.ids.length} tokens, expected ${tokens}`);
  return {
    encodeMs: prepared.timings.preprocess + prepared.timings.encode,
    prefillMs: result.timings.prefillMs,
    decodeMs: result.timings.decodeMs,
    totalMs,
  };
}

const modeName = (mode: PeerMode) => `--precision ${mode.precision} --quantize ${mode.quantize}`;

/** A run's figures as a progress line, so that an interrupted comparison still shows what it measured. */
const stagesLine = (ms: PageStageMs) =>
  `encode ${ms.encodeMs.toFixed(0)} ms, prefill ${ms.prefillMs.toFixed(0)} ms, decode ${ms.decodeMs.toFixed(0)} ms, total ${ms.totalMs.toFixed(0)} ms`;

export async function measurePeer(job: PeerJob, progress: (line: string) => void): Promise<PeerAnswer> {
  const spec = job.pageCase;
  const mode = job.mode;
  const image = syntheticPage(spec.pageSize, 0);
  progress(`loading our engine with ${modeName(mode)}, one untimed read of the page, the decoder's warm-up`);
  const engine = await OcrEngine.load(job.modelDir, { threads: job.threads, device: job.device, ...mode });
  if (engine.variant !== spec.variant) throw new Error(`${job.modelDir} holds a ${engine.variant} checkpoint, case ${spec.id} needs ${spec.variant}`);
  const prepared = await engine.prepare([image], spec.task, spec.mode);
  const [columns, rows] = prepared.pages[0].preprocessed.grid;
  if (columns * rows !== Math.max(1, spec.tiles)) throw new Error(`case ${spec.id}: the page became ${columns}×${rows} tiles, expected ${spec.tiles}`);
  await warmUpDecoder(engine.model);

  const int8 = mode.quantize === 'int8';
  const answer: PeerAnswer = {
    caseId: spec.id,
    tokens: job.tokens,
    promptTokens: prepared.promptIds.length,
    peer: job.withPeer ? [{ int8, runs: [] }] : [],
    ours: [{ ...mode, runs: [] }],
  };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-bench-peer-'));
  try {
    const imageFile = path.join(dir, `${spec.id}.png`);
    await writePng(image, imageFile);
    for (let run = 1; run <= job.runs; run++) {
      for (const peer of answer.peer) {
        progress(`run ${run}/${job.runs}: the peer${int8 ? ' with --int4' : ''}, ${spec.pageSize.join('×')} page, ${job.tokens} tokens`);
        const profile = await runPeer({ bin: job.peerBin, modelDir: job.modelDir, image: imageFile, threads: job.threads, tokens: job.tokens, int8 });
        progress(`  the peer: ${stagesLine(profile)}`);
        peer.runs.push(profile);
      }
      progress(`run ${run}/${job.runs}: ours with ${modeName(mode)}`);
      const sample = await readPage(engine, image, spec, job.tokens);
      progress(`  ours: ${stagesLine(sample)}`);
      answer.ours[0].runs.push(sample);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return answer;
}
