// Batched greedy generation over the native decoder: every active sequence advances by one token
// per forward call, so concurrent requests share each pass over the weights.
import {
  applyRepetitionPenalty,
  argmax,
  banTokens,
  noRepeatNgramBans,
  topK,
  type NoRepeatNgramOptions,
  type TopK,
} from './logits-processors.js';
import type { NativeModel, NativeSequence } from './native-model.js';

/** Turns token ids into text as they arrive; holds back bytes of an incomplete UTF-8 character. */
export interface TextStream {
  push(id: number): string;
  flush(): string;
}

export interface GenerationRequest {
  /** Prompt ids, BOS included. */
  promptIds: readonly number[];
  /** Rows of the prompt whose embeddings are replaced (image tokens): values[rows.length, hidden]. */
  embeds?: { rows: Int32Array; values: Float32Array };
  maxNewTokens: number;
  /** Stop at EOS (default true). */
  stopAtEos?: boolean;
  /** Ids that end generation like EOS does (default: the model's EOS id). */
  stopIds?: readonly number[];
  noRepeatNgram?: NoRepeatNgramOptions;
  /** HF repetition penalty over prompt and generated ids (1 = off). */
  repetitionPenalty?: number;
  /** Teacher forcing: feed these ids instead of the chosen ones; generation length = forceIds.length. */
  forceIds?: readonly number[];
  /** Record the k best (processed) logits of every step, the first being the prefill position. */
  recordTopK?: number;
  /** Keep the prefill position's raw logits[vocab] in the result. */
  keepPrefillLogits?: boolean;
  /** Streaming: `text` turns ids into text; `onText` receives each new piece of complete UTF-8 text. */
  stream?: { text: TextStream; onText: (delta: string) => void };
}

export type FinishReason = 'eos' | 'length';

export interface GenerationResult {
  /** Generated ids (forced ids when teacher-forced). */
  ids: number[];
  /** The id chosen by the model at every step (equals `ids` unless teacher-forced). */
  chosen: number[];
  finish: FinishReason;
  promptTokens: number;
  topk: TopK[];
  prefillLogits?: Float32Array;
  /** Wall time of the batched prefill call, and of the decode steps after it (shared by the batch). */
  timings: { prefillMs: number; decodeMs: number };
}

interface Active {
  request: GenerationRequest;
  sequence: NativeSequence;
  result: GenerationResult;
  limit: number;
  done: boolean;
}

function validate(request: GenerationRequest, vocab: number): void {
  if (request.promptIds.length === 0) throw new Error('generate: the prompt is empty');
  for (const id of request.promptIds) {
    if (!Number.isInteger(id) || id < 0 || id >= vocab) throw new Error(`generate: prompt id ${id} is outside [0, ${vocab})`);
  }
  if (!Number.isInteger(request.maxNewTokens) || request.maxNewTokens < 0) {
    throw new Error('generate: maxNewTokens must be a non-negative integer');
  }
}

/** Applies the request's processors to a copy of `raw` and picks the next token. */
function chooseToken(active: Active, raw: Float32Array): number {
  const { request, result } = active;
  let logits = raw;
  if (request.noRepeatNgram || (request.repetitionPenalty && request.repetitionPenalty !== 1)) {
    logits = Float32Array.from(raw);
    if (request.repetitionPenalty && request.repetitionPenalty !== 1) {
      applyRepetitionPenalty(logits, [...request.promptIds, ...result.ids], request.repetitionPenalty);
    }
    if (request.noRepeatNgram) banTokens(logits, noRepeatNgramBans(result.ids, request.noRepeatNgram));
  }
  if (request.recordTopK) result.topk.push(topK(logits, request.recordTopK));
  return argmax(logits);
}

export interface GenerateOptions {
  /** Checked before the prefill and before every decode step: once aborted, generate rejects with its reason. */
  signal?: AbortSignal;
}

export async function generate(
  decoder: NativeModel,
  requests: readonly GenerationRequest[],
  options: GenerateOptions = {},
): Promise<GenerationResult[]> {
  for (const request of requests) validate(request, decoder.vocab);
  const eos = decoder.config.eosId;
  const actives: Active[] = requests.map((request) => ({
    request,
    sequence: decoder.createSequence(),
    result: {
      ids: [],
      chosen: [],
      finish: 'length',
      promptTokens: request.promptIds.length,
      topk: [],
      timings: { prefillMs: 0, decodeMs: 0 },
    },
    limit: request.forceIds ? request.forceIds.length : request.maxNewTokens,
    done: false,
  }));
  try {
    options.signal?.throwIfAborted();
    const prefillStart = performance.now();
    let logits = await decoder.forward(
      actives.map(({ request, sequence }) => ({
        sequence,
        ids: Int32Array.from(request.promptIds),
        embeds: request.embeds?.values,
        embedRows: request.embeds?.rows,
      })),
    );
    const prefillMs = performance.now() - prefillStart;
    let stepping = actives;
    actives.forEach((active, i) => {
      active.result.timings.prefillMs = prefillMs;
      if (active.request.keepPrefillLogits) active.result.prefillLogits = Float32Array.from(logits[i]);
    });
    for (;;) {
      const next: Active[] = [];
      stepping.forEach((active, i) => {
        const { request, result } = active;
        if (result.ids.length >= active.limit) {
          active.done = true;
          return;
        }
        const chosen = chooseToken(active, logits[i]);
        const fed = request.forceIds ? request.forceIds[result.ids.length] : chosen;
        result.chosen.push(chosen);
        result.ids.push(fed);
        if (request.stream) {
          const text = request.stream.text.push(fed);
          if (text) request.stream.onText(text);
        }
        if (request.stopAtEos !== false && !request.forceIds && (request.stopIds ?? [eos]).includes(fed)) {
          result.finish = 'eos';
          active.done = true;
        } else if (result.ids.length >= active.limit) {
          active.done = true;
        } else {
          next.push(active);
        }
      });
      if (next.length === 0) break;
      options.signal?.throwIfAborted();
      const stepStart = performance.now();
      logits = await decoder.forward(
        next.map(({ sequence, result }) => ({ sequence, ids: Int32Array.of(result.ids[result.ids.length - 1]) })),
      );
      const stepMs = performance.now() - stepStart;
      for (const active of next) active.result.timings.decodeMs += stepMs;
      stepping = next;
    }
  } finally {
    for (const active of actives) {
      active.sequence.release();
      const { stream } = active.request;
      if (stream) {
        const rest = stream.text.flush();
        if (rest) stream.onText(rest);
      }
    }
  }
  return actives.map((active) => active.result);
}
