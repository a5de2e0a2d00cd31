// Greedy generation over the native decoder with continuous batching: every active sequence
// advances by one token per forward call, so concurrent requests share each pass over the weights;
// a new request joins between steps (its prefill rides in the same forward calls, in chunks while
// the batch is busy: join-budget.ts) and a finished one leaves at once. With full attention a
// sequence that would outgrow the memory is preempted: it gives up its cache and reads its prompt
// and its generated ids again once there is room, which gives the same logits (the kernels are
// row-invariant and attention rows depend on their position alone).
import {
  admission,
  cacheBytesDuringCall,
  callFits,
  doesNotFitError,
  hostMemory,
  kvCacheBoundBytes,
  PLANNED_NEW_TOKENS,
} from './device-memory.js';
import { JoinBudget, type JoinGrant } from './join-budget.js';
import type { ForwardInput, ForwardOutput, NativeSequence } from './native-binding.js';
import {
  applyRepetitionPenalty,
  argmax,
  banTokens,
  logProbability,
  noRepeatNgramBans,
  topK,
  type NoRepeatNgramOptions,
  type TopK,
} from './logits-processors.js';
import type { ForwardStep, NativeModel } from './native-model.js';

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

/** Why decoding stopped: an end id, the token budget, or the request's deadline (GenerateOptions). */
export type FinishReason = 'eos' | 'max_tokens' | 'timeout';

export interface GenerationResult {
  /** Generated ids (forced ids when teacher-forced). */
  ids: number[];
  /** The id chosen by the model at every step (equals `ids` unless teacher-forced). */
  chosen: number[];
  /**
   * At every step, the natural log of the model's probability of `chosen`: the log-softmax of the raw
   * logits over the whole vocabulary, before any processor (bans, repetition penalty). From the native
   * head's streamed log-sum-exp, or in float64 from the logits when they came back. Teacher-forced
   * steps report the chosen id's, not the fed id's (the head computes no other).
   */
  logprobs: number[];
  finish: FinishReason;
  promptTokens: number;
  topk: TopK[];
  prefillLogits?: Float32Array;
  /**
   * Wall time of the forward calls that held the prefill (and the reading again after a preemption),
   * and of the decode steps after it (shared by the batch).
   */
  timings: { prefillMs: number; decodeMs: number };
  /** How often the sequence was preempted (ContinuousBatch): each time it read its tokens again. */
  preemptions: number;
}

interface Member {
  request: GenerationRequest;
  sequence: NativeSequence | undefined;  // created when the member joins the batch
  result: GenerationResult;
  limit: number;
  /** Tokens it reads before it decodes: its prompt, and after a preemption its generated ids too. */
  readTo: number;
  stop: GenerateOptions;
  resolve(result: GenerationResult): void;
  reject(error: unknown): void;
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

/** The prompt's replaced embeddings at positions [start, end), their rows counted from start. */
function promptEmbeds(request: GenerationRequest, start: number, end: number): Pick<ForwardInput, 'embeds' | 'embedRows'> {
  const { embeds } = request;
  if (embeds === undefined) return {};
  if (start === 0 && end === request.promptIds.length) return { embeds: embeds.values, embedRows: embeds.rows };
  const hidden = embeds.rows.length === 0 ? 0 : embeds.values.length / embeds.rows.length;
  const picked = [...embeds.rows.keys()].filter((i) => embeds.rows[i] >= start && embeds.rows[i] < end);
  const values = new Float32Array(picked.length * hidden);
  picked.forEach((i, k) => values.set(embeds.values.subarray(i * hidden, (i + 1) * hidden), k * hidden));
  return { embeds: values, embedRows: Int32Array.from(picked, (i) => embeds.rows[i] - start) };
}

/** A processor of the request reads more than the argmax: the full logits must come back. */
function needsLogits(request: GenerationRequest): boolean {
  return (request.repetitionPenalty !== undefined && request.repetitionPenalty !== 1) || (request.recordTopK ?? 0) > 0;
}

/** Applies the request's processors to a copy of `raw` and picks the next token. */
function chooseToken(member: Member, raw: Float32Array): number {
  const { request, result } = member;
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

/** Two ways to stop a request, both checked before the prefill and before every decode step. */
export interface GenerateOptions {
  /** Once aborted (a cancel, a shutdown), the request rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Once aborted, a request that is decoding resolves with the ids it has, finish 'timeout'; one that
   * has not joined the batch yet read nothing and rejects with the signal's reason.
   */
  deadline?: AbortSignal;
}

/** Decodes `requests` together (a one-off batch); resolves with one result per request, in order. */
export async function generate(
  decoder: NativeModel,
  requests: readonly GenerationRequest[],
  options: GenerateOptions = {},
): Promise<GenerationResult[]> {
  for (const request of requests) validate(request, decoder.vocab);
  const batch = new ContinuousBatch(decoder, Math.max(1, requests.length));
  return Promise.all(requests.map((request) => batch.generate(request, options)));
}

/** One forward call of a continuous batch, as its `onStep` observer sees it. */
export interface BatchStep {
  /** performance.now() when the call was made. */
  startedMs: number;
  /** Its wall time, waiting for other native work on the model (an encode) included. */
  ms: number;
  /** Its own time on the engine. */
  computeMs: number;
  /** Places of the batch taken: sequences decoding or still reading their prompt. */
  places: number;
  /** Sequences that fed one generated token, and the prompt tokens fed by sequences joining. */
  decodeRows: number;
  prefillTokens: number;
  /** Tokens the call generated: one per decoding row and per sequence whose prompt it finished. */
  generated: number;
  /** Sequences preempted before the call, to fit the memory (ContinuousBatch). */
  preempted: number;
}

export interface ContinuousBatchOptions {
  /** Called after every successful forward call, e.g. by a benchmark timing the steps. */
  onStep?: (step: BatchStep) => void;
}

/**
 * Continuous batching on one model: at most `maxSequences` sequences decode together; a request
 * joins at the next step once there is room, and leaves as soon as it is done. Every sequence's
 * logits are bitwise the same whatever else shares its steps (the native kernels are
 * row-invariant), so batching changes speed, never text.
 *
 * Memory (device-memory.ts): a sequence joins while the KV caches' bounds fit the budget. With a
 * sliding window (V3) a cache's bound is small and counted whole. With full attention a sequence
 * is counted for PLANNED_NEW_TOKENS (or what it has generated, once more) instead of its limit, and
 * before each call the newest sequences are preempted while the caches' growth in that call would
 * pass the budget: each waits first in line, and reads its prompt and generated ids again when it
 * joins. A sequence alone that cannot grow fails with the numbers.
 */
export class ContinuousBatch {
  readonly #model: NativeModel;
  readonly #maxSequences: number;
  readonly #onStep: ContinuousBatchOptions['onStep'];
  readonly #waiting: Member[] = [];
  readonly #joinBudget: JoinBudget;
  /** Full attention: a sequence can read its generated ids again, so it is admitted for its planned size. */
  readonly #preemptible: boolean;
  /** Members in the order they joined: the newest is preempted first. */
  #members: Member[] = [];
  #preempted = 0;
  #running = false;

  constructor(model: NativeModel, maxSequences: number, options: ContinuousBatchOptions = {}) {
    if (!(Number.isInteger(maxSequences) && maxSequences >= 1)) throw new RangeError(`maxSequences must be an integer >= 1, got ${maxSequences}`);
    this.#model = model;
    this.#maxSequences = maxSequences;
    this.#onStep = options.onStep;
    this.#joinBudget = new JoinBudget(model.promptChunkTokens);
    this.#preemptible = model.config.decoder.slidingWindow === 0;
  }

  /** Sequences decoding now, and requests waiting for a place. */
  get size(): { active: number; waiting: number } {
    return { active: this.#members.length, waiting: this.#waiting.length };
  }

  /**
   * Generates for one request within the shared batch. `stop`'s signals are checked before the
   * request's every step: once one aborts, the request leaves the batch (see GenerateOptions).
   */
  generate(request: GenerationRequest, stop: GenerateOptions = {}): Promise<GenerationResult> {
    validate(request, this.#model.vocab);
    return new Promise<GenerationResult>((resolve, reject) => {
      this.#waiting.push({
        request,
        sequence: undefined,
        result: {
          ids: [],
          chosen: [],
          logprobs: [],
          finish: 'max_tokens',
          promptTokens: request.promptIds.length,
          topk: [],
          timings: { prefillMs: 0, decodeMs: 0 },
          preemptions: 0,
        },
        limit: request.forceIds ? request.forceIds.length : request.maxNewTokens,
        readTo: request.promptIds.length,
        stop,
        resolve,
        reject,
      });
      if (!this.#running) void this.#run();
    });
  }

  async #run(): Promise<void> {
    this.#running = true;
    try {
      for (;;) {
        for (const member of [...this.#waiting, ...this.#members]) this.#stopIfAsked(member);
        while (this.#members.length < this.#maxSequences && this.#waiting.length > 0) {
          const room = this.#memoryRoom(this.#waiting[0]);
          if (room === 'wait') break; // the first in line joins first once there is room
          const member = this.#waiting.shift()!;
          if (room instanceof Error) {
            this.#leave(member, room);
            continue;
          }
          member.sequence = this.#model.createSequence();
          this.#members.push(member);
        }
        this.#preemptToFit();
        if (this.#members.length === 0) {
          if (this.#waiting.length === 0) return;
          continue;
        }
        await this.#step([...this.#members]);
      }
    } catch (error) {
      // Only a bug gets here: fail everything rather than hang the callers.
      for (const member of [...this.#members, ...this.#waiting]) this.#leave(member, error);
    } finally {
      this.#running = false;
    }
  }

  /**
   * Whether the member's KV cache fits the memory budget beside the batch's (the GPU's device memory,
   * or on the CPU what the process may hold; see device-memory.ts): 'join', 'wait', or the error it
   * fails with when it can never fit. It joins when the caches' bounds fit and, with full attention,
   * its first call fits beside the batch's next one.
   */
  #memoryRoom(member: Member): 'join' | 'wait' | Error {
    const memory = this.#memory();
    const dims = this.#model.config.decoder;
    const bound = (m: Member) => kvCacheBoundBytes(dims, this.#model.kvCache, m.request.promptIds.length, this.#plannedTokens(m));
    const batch = this.#members.map((m) => ({ boundBytes: bound(m), cacheBytes: m.sequence!.cacheBytes }));
    const tokens = member.request.promptIds.length + this.#plannedTokens(member);
    const room = admission(memory, batch, bound(member));
    if (room === 'never') return doesNotFitError(this.#model.backend, memory, batch, tokens, bound(member));
    if (room === 'wait' || !this.#preemptible) return room;
    const firstCall = this.#bytesDuringCall(member);
    if (callFits(memory, [...this.#callBytes(), { cacheBytes: 0, duringCallBytes: firstCall }])) return 'join';
    return this.#members.length > 0 ? 'wait' : doesNotFitError(this.#model.backend, memory, [], member.readTo, firstCall);
  }

  #memory() {
    return this.#model.deviceMemory ?? hostMemory();
  }

  /** The new tokens the member's cache is counted for: its limit, or with full attention its planned size. */
  #plannedTokens(member: Member): number {
    if (!this.#preemptible) return member.limit;
    return Math.min(member.limit, Math.max(member.result.ids.length + 1, PLANNED_NEW_TOKENS));
  }

  /** The bytes the member's cache holds during the next call, which feeds it all it has left to read, or one id. */
  #bytesDuringCall(member: Member): number {
    const length = member.sequence?.length ?? 0;
    const newTokens = length < member.readTo ? member.readTo - length : 1;
    return cacheBytesDuringCall(this.#model.config.decoder, this.#model.kvCache, member.sequence?.cacheBytes ?? 0, length, newTokens);
  }

  #callBytes(): { cacheBytes: number; duringCallBytes: number }[] {
    return this.#members.map((m) => ({ cacheBytes: m.sequence!.cacheBytes, duringCallBytes: this.#bytesDuringCall(m) }));
  }

  /**
   * With full attention, before a call: while the caches would outgrow the budget in it, the newest
   * member is preempted. A member alone that does not fit fails with the numbers.
   */
  #preemptToFit(): void {
    if (!this.#preemptible) return;
    while (this.#members.length > 0 && !callFits(this.#memory(), this.#callBytes())) {
      const newest = this.#members[this.#members.length - 1];
      if (this.#members.length > 1) {
        this.#preempt(newest);
        continue;
      }
      const memory = this.#memory();
      const needs = this.#bytesDuringCall(newest);
      const batch = [{ boundBytes: needs, cacheBytes: newest.sequence!.cacheBytes }];
      this.#leave(newest, doesNotFitError(this.#model.backend, memory, batch, newest.sequence!.length + 1, needs));
    }
  }

  /** Releases the member's cache and puts it first in line, to read its prompt and generated ids again. */
  #preempt(member: Member): void {
    this.#members = this.#members.filter((m) => m !== member);
    member.sequence!.release();
    member.sequence = undefined;
    member.readTo = member.result.promptTokens + member.result.ids.length;
    member.result.preemptions += 1;
    this.#preempted += 1;
    this.#waiting.unshift(member);
  }

  /**
   * One forward call for `members`: those decoding, and those joining with as much of their prompt
   * as the step's grant allows (join-budget.ts; a member given none sits this step out). When it
   * fails, each member is retried alone so a bad one fails by itself.
   */
  async #step(members: Member[]): Promise<void> {
    const grant = this.#joinGrant(members);
    let prefillTokens = 0;
    const fed: { member: Member; input: ForwardInput; prompt: boolean }[] = [];
    for (const member of members) {
      const prompt = this.#reading(member);
      // A preempted member reads its tokens again in one call, outside the grant: its cache is then
      // allocated once, at the size its admission counted, with no growth to copy on the way.
      const rereading = member.readTo > member.result.promptTokens;
      const input = this.#input(member, rereading ? Infinity : grant.prefillTokens - prefillTokens);
      if (input === undefined) continue;
      if (prompt) prefillTokens += input.ids.length;
      fed.push({ member, input, prompt });
    }
    const started = performance.now();
    let step: ForwardStep;
    try {
      step = await this.#model.step(fed.map(({ input }) => input), { encodeMs: grant.encodeMs(prefillTokens) });
    } catch (error) {
      if (members.length === 1) {
        this.#leave(members[0], error);
      } else {
        for (const member of members) await this.#step([member]);
      }
      return;
    }
    const ms = performance.now() - started;
    const decodeRows = fed.filter(({ prompt }) => !prompt).length;
    this.#joinBudget.observe(step.computeMs, decodeRows, prefillTokens);
    let generated = 0;
    fed.forEach(({ member, prompt }, i) => {
      const { result } = member;
      if (prompt) {
        result.timings.prefillMs += ms;
        if (this.#reading(member)) return; // more of its prompt to come
        if (member.request.keepPrefillLogits && result.ids.length === 0) result.prefillLogits = Float32Array.from(step.outputs[i].logits!);
      } else {
        result.timings.decodeMs += ms;
      }
      generated += 1;
      this.#advance(member, step.outputs[i]);
    });
    this.#onStep?.({ startedMs: started, ms, computeMs: step.computeMs, places: members.length, decodeRows, prefillTokens, generated, preempted: this.#preempted });
    this.#preempted = 0;
  }

  /**
   * The step's grant to joining pages: limited on the CPU while some member decodes and no free
   * place waits for a page (join-budget.ts).
   */
  #joinGrant(members: Member[]): JoinGrant {
    const decoding = members.some((member) => !this.#reading(member));
    const placeWaits = members.length < this.#maxSequences && this.#waiting.length === 0;
    return this.#joinBudget.grant(this.#model.device.backend === 'cpu' && decoding && !placeWaits);
  }

  /** Whether the member is still reading its prompt (or, after a preemption, its generated ids). */
  #reading(member: Member): boolean {
    return member.sequence!.length < member.readTo;
  }

  /**
   * The member's next forward input: the next part of what it reads (at most `prefillTokens`, ending
   * at a multiple of promptChunkTokens or at its end; undefined when that leaves none), else its last
   * id. Full logits come back only when a processor needs them (repetition penalty, top-k records,
   * the kept prefill logits); otherwise the native head returns the argmax, skipping the n-gram bans.
   */
  #input(member: Member, prefillTokens: number): ForwardInput | undefined {
    const { request, result } = member;
    const sequence = member.sequence!;
    const bans = () => (request.noRepeatNgram ? Int32Array.from(noRepeatNgramBans(result.ids, request.noRepeatNgram)) : undefined);
    if (this.#reading(member)) {
      const start = sequence.length;
      const chunk = this.#model.promptChunkTokens;
      const end = Math.min(member.readTo, Math.floor((start + prefillTokens) / chunk) * chunk);
      if (end <= start) return undefined;
      const last = end === member.readTo;
      const logits = last && (needsLogits(request) || (request.keepPrefillLogits === true && result.ids.length === 0));
      // Reading again after a preemption: the generated ids follow the prompt, and the last part's
      // argmax is the next token, under the n-gram bans as in decoding.
      const ids = end <= result.promptTokens ? request.promptIds.slice(start, end) : [...request.promptIds, ...result.ids].slice(start, end);
      const banned = last && !logits && result.ids.length > 0 ? bans() : undefined;
      return { sequence, ids: Int32Array.from(ids), ...promptEmbeds(request, start, end), promptTokens: result.promptTokens, logits, banned };
    }
    const logits = needsLogits(request);
    return { sequence, ids: Int32Array.of(result.ids[result.ids.length - 1]), logits, banned: logits ? undefined : bans() };
  }

  /** Takes the token chosen from `output`; the member leaves once it is done. */
  #advance(member: Member, output: ForwardOutput): void {
    const { request, result } = member;
    if (result.ids.length >= member.limit) {
      this.#leave(member);
      return;
    }
    const chosen = output.logits ? chooseToken(member, output.logits) : output.best;
    const fed = request.forceIds ? request.forceIds[result.ids.length] : chosen;
    result.chosen.push(chosen);
    result.logprobs.push(output.logits ? logProbability(output.logits, chosen) : output.logprob);
    result.ids.push(fed);
    if (request.stream) {
      const text = request.stream.text.push(fed);
      if (text) request.stream.onText(text);
    }
    if (request.stopAtEos !== false && !request.forceIds && (request.stopIds ?? [this.#model.config.eosId]).includes(fed)) {
      result.finish = 'eos';
      this.#leave(member);
    } else if (result.ids.length >= member.limit) {
      this.#leave(member);
    }
  }

  /** Makes the member leave when one of its stop signals has aborted (GenerateOptions). */
  #stopIfAsked(member: Member): void {
    const { signal, deadline } = member.stop;
    if (signal?.aborted) {
      this.#leave(member, signal.reason);
    } else if (deadline?.aborted) {
      if (member.sequence === undefined && member.result.ids.length === 0) {
        this.#leave(member, deadline.reason);
      } else {
        member.result.finish = 'timeout';
        this.#leave(member);
      }
    }
  }

  /** Removes the member from the batch, releases its cache and settles its promise. */
  #leave(member: Member, error?: unknown): void {
    this.#members = this.#members.filter((m) => m !== member);
    const waiting = this.#waiting.indexOf(member);
    if (waiting >= 0) this.#waiting.splice(waiting, 1);
    member.sequence?.release();
    const { stream } = member.request;
    if (stream) {
      const rest = stream.text.flush();
      if (rest) stream.onText(rest);
    }
    if (error === undefined) {
      member.resolve(member.result);
    } else {
      member.reject(error);
    }
  }
}
