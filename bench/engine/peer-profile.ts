// Reads the timings the peer (ds-ocr, run with --profile) prints on stderr after a page:
//   Inference: 45512 ms, 256 text tokens (21.74 tok/s decode)
//     Encoding: 8876 ms | Prefill: 1893 ms | Decode: 11775 ms
// and, before them, the prompt length ("Decoder prefix: 280 tokens"). Its other lines (progress,
// the per-layer profiler table) are ignored, wherever they appear.

/** Milliseconds of one page read, per stage; encode includes preprocessing, as the peer counts it. */
export interface PageStageMs {
  encodeMs: number;
  prefillMs: number;
  /** Every forward call after the prefill (the first generated token comes from the prefill). */
  decodeMs: number;
  totalMs: number;
}

export interface PeerProfile extends PageStageMs {
  generatedTokens: number;
  /** Tokens of the prompt the peer prefilled, when it printed them. */
  promptTokens?: number;
}

const NUMBER = String.raw`(\d+(?:\.\d+)?)`;
const INFERENCE_LINE = new RegExp(String.raw`^\s*Inference:\s*${NUMBER}\s*ms,\s*(\d+)\s+text tokens`, 'm');
const STAGES_LINE = new RegExp(String.raw`^\s*Encoding:\s*${NUMBER}\s*ms\s*\|\s*Prefill:\s*${NUMBER}\s*ms\s*\|\s*Decode:\s*${NUMBER}\s*ms`, 'm');
const PREFIX_LINE = /^\s*Decoder prefix:\s*(\d+)\s+tokens/m;

/** The last match of `pattern` (a page's summary comes after everything the page printed). */
function lastMatch(text: string, pattern: RegExp): RegExpMatchArray | undefined {
  const all = [...text.matchAll(new RegExp(pattern.source, `${pattern.flags}g`))];
  return all[all.length - 1];
}

/** Throws, quoting the end of the output, when the summary lines are missing. */
export function parsePeerProfile(stderr: string): PeerProfile {
  const text = stderr.replace(/\r\n?/g, '\n');
  const inference = lastMatch(text, INFERENCE_LINE);
  const stages = lastMatch(text, STAGES_LINE);
  if (!inference || !stages) {
    const missing = !inference ? '"Inference: N ms, N text tokens"' : '"Encoding: N ms | Prefill: N ms | Decode: N ms"';
    const tail = text.trimEnd().split('\n').slice(-5).join('\n');
    throw new Error(`the peer's output has no ${missing} line; its last lines:\n${tail}`);
  }
  const prefix = lastMatch(text, PREFIX_LINE);
  return {
    totalMs: Number(inference[1]),
    generatedTokens: Number(inference[2]),
    encodeMs: Number(stages[1]),
    prefillMs: Number(stages[2]),
    decodeMs: Number(stages[3]),
    ...(prefix ? { promptTokens: Number(prefix[1]) } : {}),
  };
}
