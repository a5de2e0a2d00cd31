// How much of a CPU engine's time the pages joining a continuous batch may take from the pages
// already decoding in it (docs/engine.md "Joining pages"). A joining page costs an encode (its
// vision encoder, which the engine runs layer by layer between decode steps) and a prefill (its
// prompt, fed in chunks that ride in the decode steps). While every place of the batch is taken, or
// a page already waits for one, the two together get at most JOIN_SHARE of the engine's time: each
// step grants them JOIN_SHARE / (1 − JOIN_SHARE) of a plain decode step, the prefill first, the
// encodes what it leaves. When a place is free and no page waits for it, joining goes first: an
// empty place costs every later step a page.

/** The share of the engine's time joining pages may take while the batch decodes. */
export const JOIN_SHARE = 0.2;

/** What one step may give to joining pages. Infinity: no limit (the whole prompt, encodes first). */
export interface JoinGrant {
  /** Prompt tokens, a multiple of the model's promptChunkTokens. */
  prefillTokens: number;
  /** Turns the tokens this step carries into the time left for encodes after it. */
  encodeMs(prefillTokens: number): number;
}

const UNLIMITED: JoinGrant = { prefillTokens: Infinity, encodeMs: () => Infinity };

export class JoinBudget {
  /** Chunks of a prompt end at multiples of this, so they read it bitwise as one call would. */
  readonly #chunkTokens: number;
  /** The engine time of the last step that decoded without prompt tokens. */
  #decodeStepMs: number | undefined;
  /** The engine time a prompt token added to the last step that carried some. */
  #prefillMsPerToken: number | undefined;

  constructor(chunkTokens: number) {
    this.#chunkTokens = chunkTokens;
  }

  /** Learns from a finished step: its time on the engine, its decoding rows and its prompt tokens. */
  observe(computeMs: number, decodeRows: number, prefillTokens: number): void {
    if (prefillTokens === 0) {
      if (decodeRows > 0) this.#decodeStepMs = computeMs;
      return;
    }
    const decodeMs = decodeRows > 0 ? (this.#decodeStepMs ?? 0) : 0;
    this.#prefillMsPerToken = Math.max(computeMs - decodeMs, 0) / prefillTokens;
  }

  /** The next step's grant; `limited` when pages are decoding and none waits on a free place. */
  grant(limited: boolean): JoinGrant {
    if (!limited || this.#decodeStepMs === undefined) return UNLIMITED;
    const joinMs = (JOIN_SHARE / (1 - JOIN_SHARE)) * this.#decodeStepMs;
    const perToken = this.#prefillMsPerToken;
    // One chunk at least, so that a prompt always advances; one while a token's cost is unknown.
    const chunks = perToken === undefined ? 1 : Math.max(1, Math.floor(joinMs / perToken / this.#chunkTokens));
    return {
      prefillTokens: chunks * this.#chunkTokens,
      encodeMs: (tokens) => Math.max(0, joinMs - tokens * (perToken ?? 0)),
    };
  }
}
