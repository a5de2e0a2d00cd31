// Deliberately simple reference of the decoder language model (docs/model.md §7, §8): plain loops in float64,
// one position at a time inside each layer, every key kept. The native engine is checked against it.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type DecoderConfig, type MoeConfig, isMoeLayer, readDecoderConfig } from './decoder-config.js';
import {
  type Matrix,
  type SwiGluWeights,
  add,
  attend,
  matVec,
  rmsNorm,
  rope,
  routeToExperts,
  swiGlu,
} from './reference-math.js';
import { SafetensorsCheckpoint } from './safetensors-reader.js';

/**
 * Rows replacing (not added to) the token embeddings at `positions`, offsets within one call's ids:
 * rows[positions.length·hidden].
 */
export interface EmbeddingOverride {
  positions: number[];
  rows: Float64Array | Float32Array;
}

/** Which key a query sees: query and key are absolute positions. */
export type Visibility = (query: number, key: number) => boolean;

/** Keys (RoPE applied) and values of every position fed so far: keys[layer][position] = [kvHeads·headDim]. */
export interface KvHistory {
  keys: Float64Array[][];
  values: Float64Array[][];
}

type FeedForward =
  | { kind: 'dense'; mlp: SwiGluWeights }
  | { kind: 'moe'; moe: MoeConfig; router: Matrix; experts: SwiGluWeights[]; shared: SwiGluWeights | null };

interface LayerWeights {
  inputNorm: Float32Array; // [hidden]
  postAttentionNorm: Float32Array; // [hidden]
  q: Matrix; // [heads·headDim, hidden]
  k: Matrix; // [kvHeads·headDim, hidden]
  v: Matrix; // [kvHeads·headDim, hidden]
  o: Matrix; // [hidden, heads·headDim]
  ffn: FeedForward;
}

/** The decoder LM of one checkpoint; sequences made by newSequence() carry their own key/value history. */
export class ReferenceDecoder {
  readonly vocabSize: number;

  private constructor(
    readonly config: DecoderConfig,
    private readonly embedTokens: Matrix, // [vocab, hidden]
    private readonly layers: LayerWeights[],
    private readonly finalNorm: Float32Array, // [hidden]
    private readonly lmHead: Matrix, // [vocab, hidden]
  ) {
    this.vocabSize = config.vocabSize;
  }

  /** Loads config.json and the decoder tensors (§3.6) of a checkpoint directory, checking every shape. */
  static load(dir: string): ReferenceDecoder {
    const config = readDecoderConfig(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')));
    const { hiddenSize: hidden, heads, kvHeads, headDim, vocabSize } = config;
    const checkpoint = SafetensorsCheckpoint.open(dir);
    const tensor = (name: string, shape: number[]) => {
      const t = checkpoint.tensor(name);
      if (t.shape.join(',') !== shape.join(',')) {
        throw new Error(`${name}: shape [${t.shape}] but config.json implies [${shape}]`);
      }
      return t.data;
    };
    const matrix = (name: string, rows: number, cols: number): Matrix => ({ rows, cols, data: tensor(name, [rows, cols]) });
    const swiGluAt = (prefix: string, width: number): SwiGluWeights => ({
      gate: matrix(`${prefix}.gate_proj.weight`, width, hidden),
      up: matrix(`${prefix}.up_proj.weight`, width, hidden),
      down: matrix(`${prefix}.down_proj.weight`, hidden, width),
    });

    const layers: LayerWeights[] = [];
    for (let l = 0; l < config.layers; l++) {
      const prefix = `model.layers.${l}`;
      let ffn: FeedForward;
      if (config.moe !== null && isMoeLayer(config, l)) {
        const moe = config.moe;
        const experts: SwiGluWeights[] = [];
        for (let e = 0; e < moe.experts; e++) experts.push(swiGluAt(`${prefix}.mlp.experts.${e}`, moe.expertWidth));
        ffn = {
          kind: 'moe',
          moe,
          router: matrix(`${prefix}.mlp.gate.weight`, moe.experts, hidden),
          experts,
          shared: moe.sharedWidth > 0 ? swiGluAt(`${prefix}.mlp.shared_experts`, moe.sharedWidth) : null,
        };
      } else {
        ffn = { kind: 'dense', mlp: swiGluAt(`${prefix}.mlp`, config.intermediateSize) };
      }
      layers.push({
        inputNorm: tensor(`${prefix}.input_layernorm.weight`, [hidden]),
        postAttentionNorm: tensor(`${prefix}.post_attention_layernorm.weight`, [hidden]),
        q: matrix(`${prefix}.self_attn.q_proj.weight`, heads * headDim, hidden),
        k: matrix(`${prefix}.self_attn.k_proj.weight`, kvHeads * headDim, hidden),
        v: matrix(`${prefix}.self_attn.v_proj.weight`, kvHeads * headDim, hidden),
        o: matrix(`${prefix}.self_attn.o_proj.weight`, hidden, heads * headDim),
        ffn,
      });
    }
    return new ReferenceDecoder(
      config,
      matrix('model.embed_tokens.weight', vocabSize, hidden),
      layers,
      tensor('model.norm.weight', [hidden]),
      matrix('lm_head.weight', vocabSize, hidden),
    );
  }

  newSequence(): ReferenceSequence {
    return new ReferenceSequence(this);
  }

  /** Logits[vocab] of the last of `ids` computed from scratch over the whole sequence, attention limited by `visible`. */
  logitsFromScratch(ids: number[], visible: Visibility, embeds?: EmbeddingOverride): Float64Array {
    const history: KvHistory = { keys: this.layers.map(() => []), values: this.layers.map(() => []) };
    return this.forwardChunk(ids, embeds, history, visible);
  }

  /**
   * Feeds ids at absolute positions history.length… through every layer, appending their keys/values to
   * `history`; returns the logits[vocab] of the last id. Shared by sequences and logitsFromScratch.
   */
  forwardChunk(
    ids: number[],
    embeds: EmbeddingOverride | undefined,
    history: KvHistory,
    visible: Visibility,
  ): Float64Array {
    const start = history.keys[0].length;
    let rows = this.embed(ids, embeds);
    this.layers.forEach((layer, l) => {
      rows = this.layerForward(layer, rows, start, history.keys[l], history.values[l], visible);
    });
    return matVec(this.lmHead, rmsNorm(rows[rows.length - 1], this.finalNorm, this.config.rmsNormEps));
  }

  /** Embedding rows of ids, with the override rows put in place: → ids.length rows of [hidden]. */
  private embed(ids: number[], embeds: EmbeddingOverride | undefined): Float64Array[] {
    const hidden = this.config.hiddenSize;
    const rows = ids.map((id) => {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
        throw new Error(`token id ${id} outside [0, ${this.vocabSize})`);
      }
      return Float64Array.from(this.embedTokens.data.subarray(id * hidden, (id + 1) * hidden));
    });
    if (embeds !== undefined) {
      if (embeds.rows.length !== embeds.positions.length * hidden) {
        throw new Error(`embeds.rows holds ${embeds.rows.length} values, expected ${embeds.positions.length}×${hidden}`);
      }
      embeds.positions.forEach((offset, n) => {
        if (!(offset >= 0 && offset < ids.length)) {
          throw new Error(`embeds position ${offset} outside this call's ${ids.length} ids`);
        }
        rows[offset] = Float64Array.from(embeds.rows.subarray(n * hidden, (n + 1) * hidden));
      });
    }
    return rows;
  }

  /** One pre-norm layer over new rows x[T][hidden] at positions start…start+T−1; keys/values gain T rows. */
  private layerForward(
    layer: LayerWeights,
    rows: Float64Array[],
    start: number,
    keys: Float64Array[],
    values: Float64Array[],
    visible: Visibility,
  ): Float64Array[] {
    const { heads, kvHeads, headDim, ropeTheta, rmsNormEps } = this.config;
    const normed = rows.map((x) => rmsNorm(x, layer.inputNorm, rmsNormEps));
    const queries = normed.map((x, i) => rope(matVec(layer.q, x), headDim, start + i, ropeTheta));
    normed.forEach((x, i) => {
      keys.push(rope(matVec(layer.k, x), headDim, start + i, ropeTheta));
      values.push(matVec(layer.v, x));
    });
    return rows.map((x, i) => {
      const position = start + i;
      const seen: number[] = [];
      for (let key = 0; key < keys.length; key++) if (visible(position, key)) seen.push(key);
      const h = add(x, matVec(layer.o, attend(queries[i], keys, values, seen, heads, kvHeads, headDim)));
      return add(h, this.feedForward(layer.ffn, rmsNorm(h, layer.postAttentionNorm, rmsNormEps)));
    });
  }

  /** Dense SwiGLU, or MoE: Σ routed weight × expert(x) + shared experts(x) (§7.4): x[hidden] → [hidden]. */
  private feedForward(ffn: FeedForward, x: Float64Array): Float64Array {
    if (ffn.kind === 'dense') return swiGlu(ffn.mlp, x);
    const { expertsPerToken, routedScalingFactor, normTopkProb } = ffn.moe;
    const route = routeToExperts(matVec(ffn.router, x), expertsPerToken, routedScalingFactor, normTopkProb);
    const out = ffn.shared === null ? new Float64Array(x.length) : swiGlu(ffn.shared, x);
    route.experts.forEach((e, n) => {
      const y = swiGlu(ffn.experts[e], x);
      for (let i = 0; i < out.length; i++) out[i] += route.weights[n] * y[i];
    });
    return out;
  }
}

/**
 * One sequence: the first forward() is the prefill (any length), each later one feeds one token. Keys are
 * never dropped; V3's R-SWA is a visibility rule over the full history (§8.2).
 */
export class ReferenceSequence {
  private readonly history: KvHistory;
  private prefillLength = 0;

  constructor(private readonly decoder: ReferenceDecoder) {
    const layers = decoder.config.layers;
    this.history = { keys: Array.from({ length: layers }, () => []), values: Array.from({ length: layers }, () => []) };
  }

  /** Number of positions fed so far (= the absolute position of the next token). */
  get length(): number {
    return this.history.keys[0].length;
  }

  /** Feeds ids (prefill, or exactly one decode token) and returns the logits[vocab] of the last one. */
  forward(ids: number[], embeds?: EmbeddingOverride): Float64Array {
    if (this.length === 0) {
      if (ids.length === 0) throw new Error('the prefill needs at least one token');
      this.prefillLength = ids.length;
    } else if (ids.length !== 1) {
      throw new Error(`after the prefill each forward() feeds exactly one token, got ${ids.length}`);
    }
    return this.decoder.forwardChunk(ids, embeds, this.history, (query, key) => this.isVisible(query, key));
  }

  /**
   * Causal, and for V3 a decode query at p ≥ L (L = prefill length) sees keys [0, L) ∪ [max(L, p − W + 1), p].
   * Prefill queries (p < L) are plainly causal.
   */
  isVisible(query: number, key: number): boolean {
    const window = this.decoder.config.slidingWindow;
    return key <= query && (window === null || key < this.prefillLength || key > query - window);
  }
}
