// `scriptorium debug dump`: runs a prompt through the engine and writes the tensors an outside
// implementation needs for a step-by-step comparison (README "Debugging"), as one safetensors file.
import { writeFile } from 'node:fs/promises';

import { generate } from './generate.js';
import type { Variant } from './model-config.js';
import { NativeDecoder } from './native-decoder.js';
import { encodeSafetensors, type DumpTensor } from './safetensors-encode.js';
import { Tokenizer } from './tokenizer.js';

export const DUMP_TOPK = 8;

export interface DumpOptions {
  modelDir: string;
  /** Text prompt: BOS followed by the tokenised, stripped text; no template, no EOS. */
  prompt: string;
  /** Free-running greedy steps (ignored when forceIds is given). */
  steps: number;
  /** Teacher forcing: generate forceIds.length steps feeding these ids instead of the argmax. */
  forceIds?: number[];
  variant?: Variant;
  threads?: number;
}

export interface Dump {
  tensors: Record<string, DumpTensor>;
  metadata: Record<string, string>;
}

/** BOS + ids of the stripped text, as the official `plain` template builds a text-only prompt. */
export function textPromptIds(tokenizer: Tokenizer, bosId: number, text: string): number[] {
  return [bosId, ...tokenizer.encode(text.trim())];
}

export async function debugDump(options: DumpOptions): Promise<Dump> {
  const decoder = await NativeDecoder.load(options.modelDir, { variant: options.variant, threads: options.threads });
  const tokenizer = await Tokenizer.fromDir(options.modelDir);
  const promptIds = textPromptIds(tokenizer, decoder.config.bosId, options.prompt);
  const steps = options.forceIds ? options.forceIds.length : options.steps;
  const [result] = await generate(decoder, [
    {
      promptIds,
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
  const tensors: Record<string, DumpTensor> = {
    input_ids: { dtype: 'I32', shape: [promptIds.length], data: Int32Array.from(promptIds) },
    prefill_logits: { dtype: 'F32', shape: [decoder.vocab], data: result.prefillLogits! },
    generated_ids: { dtype: 'I32', shape: [steps], data: Int32Array.from(result.ids) },
    step_topk_ids: { dtype: 'I32', shape: [steps, DUMP_TOPK], data: topkIds },
    step_topk_logits: { dtype: 'F32', shape: [steps, DUMP_TOPK], data: topkLogits },
  };
  const metadata: Record<string, string> = {
    format: 'scriptorium-debug-dump/1',
    variant: decoder.config.variant,
    activation_precision: 'f32',
    weight_precision: 'bf16',
    kernels: decoder.kernels,
    threads: String(decoder.threads),
    decode: options.forceIds ? 'teacher-forced' : 'greedy',
    attention: decoder.config.decoder.slidingWindow > 0 ? `r-swa window ${decoder.config.decoder.slidingWindow}` : 'full causal',
    steps: String(steps),
  };
  return { tensors, metadata };
}

export async function writeDump(file: string, dump: Dump): Promise<void> {
  await writeFile(file, encodeSafetensors(dump.tensors, dump.metadata));
}
