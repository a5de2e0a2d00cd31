// `scriptorium debug dump`: runs a prompt (text, or images with a task) through the engine and
// writes the tensors an outside implementation needs for a step-by-step comparison, as one
// safetensors file (docs/engine.md "The debug dump").
import { writeFile } from 'node:fs/promises';

import type { RgbImage } from '../documents/rgb-image.js';
import type { DeviceSpec } from '../engine/compute-device.js';
import type { WeightQuantization } from '../engine/native-binding.js';
import type { Precision } from '../engine/precision.js';
import { generate } from '../engine/generate.js';
import type { OcrTask, Variant, VisionMode } from '../vocabulary/ocr-vocabulary.js';
import { NativeModel } from '../engine/native-model.js';
import { OcrEngine, type PreparedPrompt } from '../engine/ocr-engine.js';
import { encodeSafetensors, type DumpTensor } from './safetensors-encode.js';
import { Tokenizer } from '../engine/tokenizer.js';

export const DUMP_TOPK = 8;

export interface DumpOptions {
  modelDir: string;
  /** Text prompt without images: BOS followed by the tokenised, stripped text; no template, no EOS. */
  prompt?: string;
  /** Page images; several only with task parse-multi (V3). */
  images?: RgbImage[];
  task?: OcrTask;
  mode?: VisionMode;
  /** Free-running greedy steps (ignored when forceIds is given). */
  steps: number;
  /** Teacher forcing: generate forceIds.length steps feeding these ids instead of the argmax. */
  forceIds?: number[];
  /** Also write the pixel tensors and every encoder's output per view. */
  intermediates?: boolean;
  variant?: Variant;
  threads?: number;
  /** Where the decoder runs (default cpu). */
  device?: DeviceSpec;
  /** Activation precision (default exact, the one reference comparisons use). */
  precision?: Precision;
  /** int8: experts and vocabulary head held in 8 bits, as workers with --quantize int8 run them (default none). */
  quantize?: WeightQuantization;
}

export interface Dump {
  tensors: Record<string, DumpTensor>;
  metadata: Record<string, string>;
}

/** BOS + ids of the stripped text, as the official `plain` template builds a text-only prompt. */
export function textPromptIds(tokenizer: Tokenizer, bosId: number, text: string): number[] {
  return [bosId, ...tokenizer.encode(text.trim())];
}

interface Prompt {
  model: NativeModel;
  promptIds: number[];
  prepared?: PreparedPrompt;
  metadata: Record<string, string>;
}

async function buildPrompt(options: DumpOptions): Promise<Prompt> {
  // F32 keys and values: the dump is the exact engine, for comparisons with other implementations.
  const load = { variant: options.variant, threads: options.threads, device: options.device, kvCache: 'f32' as const, precision: options.precision, quantize: options.quantize };
  if (!options.images?.length) {
    if (options.prompt === undefined) throw new Error('debug dump needs --prompt or --image');
    const [model, tokenizer] = await Promise.all([NativeModel.load(options.modelDir, load), Tokenizer.fromDir(options.modelDir)]);
    return { model, promptIds: textPromptIds(tokenizer, model.config.bosId, options.prompt), metadata: { prompt: 'text' } };
  }
  const engine = await OcrEngine.load(options.modelDir, load);
  const task = options.task ?? engine.defaultTask(options.images.length);
  const mode = options.mode ?? 'gundam';
  const prepared = await engine.prepare(options.images, task, mode, options.intermediates ?? false);
  return {
    model: engine.model,
    promptIds: prepared.promptIds,
    prepared,
    metadata: {
      prompt: 'image',
      task,
      mode: task === 'parse-multi' ? 'base' : mode,
      pages: String(options.images.length),
      pixels_rounded_to_bf16: 'true',
    },
  };
}

/** Pixel and encoder tensors per view, official layouts; a page axis leads when there are several pages. */
function intermediateTensors(prepared: PreparedPrompt, kind: 'clip' | 'qwen2'): Record<string, DumpTensor> {
  const out: Record<string, DumpTensor> = {};
  const pages = prepared.pages;
  const multi = pages.length > 1;
  const stack = (parts: Float32Array[], shape: number[]): DumpTensor => {
    const data = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => (data.set(p, at), at + p.length), 0);
    return { dtype: 'F32', shape: multi ? [parts.length, ...shape] : shape, data };
  };
  const first = pages[0];
  const side = first.preprocessed.globalSide;
  const width = (views: { encoder?: Float32Array; tokensPerView: number }, count = 1) => views.encoder!.length / (count * views.tokensPerView);
  const hidden = first.global.projected.length / first.global.tokensPerView;
  out.pixels_global = stack(pages.map((p) => p.preprocessed.global), [3, side, side]);
  out.sam_global = stack(pages.map((p) => p.global.sam!), first.global.samShape!.slice(1));
  out[`${kind}_global`] = stack(pages.map((p) => p.global.encoder!), [first.global.tokensPerView, width(first.global)]);
  out.projected_global = stack(pages.map((p) => p.global.projected), [first.global.tokensPerView, hidden]);
  if (!multi && first.tiles) {
    const { tiles, preprocessed } = first;
    const n = preprocessed.grid[0] * preprocessed.grid[1];
    const t = preprocessed.tileSide;
    out.pixels_tiles = { dtype: 'F32', shape: [n, 3, t, t], data: preprocessed.tiles! };
    out.sam_tiles = { dtype: 'F32', shape: tiles.samShape!, data: tiles.sam! };
    out[`${kind}_tiles`] = { dtype: 'F32', shape: [n, tiles.tokensPerView, width(tiles, n)], data: tiles.encoder! };
    out.projected_tiles = { dtype: 'F32', shape: [n, tiles.tokensPerView, hidden], data: tiles.projected };
  }
  return out;
}

export async function debugDump(options: DumpOptions): Promise<Dump> {
  const { model, promptIds, prepared, metadata: promptMetadata } = await buildPrompt(options);
  const steps = options.forceIds ? options.forceIds.length : options.steps;
  const [result] = await generate(model, [
    {
      promptIds,
      embeds: prepared && { rows: prepared.imagePositions, values: prepared.visionEmbeds },
      maxNewTokens: steps,
      stopAtEos: false,
      forceIds: options.forceIds,
      recordTopK: DUMP_TOPK,
      keepPrefillLogits: true,
    },
  ]);
  const topkIds = new Int32Array(steps * DUMP_TOPK);
  const topkLogits = new Float32Array(steps * DUMP_TOPK);
  result.topk.forEach((row, i) => {
    topkIds.set(row.ids, i * DUMP_TOPK);
    topkLogits.set(row.logits, i * DUMP_TOPK);
  });
  const hidden = model.config.decoder.hidden;
  const tensors: Record<string, DumpTensor> = {
    input_ids: { dtype: 'I32', shape: [promptIds.length], data: Int32Array.from(promptIds) },
    ...(prepared && {
      vision_embeds: { dtype: 'F32', shape: [prepared.visionEmbeds.length / hidden, hidden], data: prepared.visionEmbeds },
    }),
    prefill_logits: { dtype: 'F32', shape: [model.vocab], data: result.prefillLogits! },
    generated_ids: { dtype: 'I32', shape: [steps], data: Int32Array.from(result.ids) },
    step_topk_ids: { dtype: 'I32', shape: [steps, DUMP_TOPK], data: topkIds },
    step_topk_logits: { dtype: 'F32', shape: [steps, DUMP_TOPK], data: topkLogits },
    ...(prepared && options.intermediates && intermediateTensors(prepared, model.vision!.kind === 'deepencoderv2' ? 'qwen2' : 'clip')),
  };
  const metadata: Record<string, string> = {
    format: 'scriptorium-debug-dump/1',
    variant: model.config.variant,
    activation_precision: model.precision === 'exact' ? 'f32' : 'bf16 in the bf16-weight products (fast)',
    precision: model.precision,
    kv_cache: 'f32',
    weight_precision: model.quantize === 'int8' ? 'int8 experts and vocabulary head (an F32 scale per 64 weights), bf16 elsewhere' : 'bf16',
    kernels: model.kernels,
    backend: model.backend,
    threads: String(model.threads),
    decode: options.forceIds ? 'teacher-forced' : 'greedy',
    attention: model.config.decoder.slidingWindow > 0 ? `r-swa window ${model.config.decoder.slidingWindow}` : 'full causal',
    steps: String(steps),
    ...promptMetadata,
  };
  return { tensors, metadata };
}

export async function writeDump(file: string, dump: Dump): Promise<void> {
  await writeFile(file, encodeSafetensors(dump.tensors, dump.metadata));
}
