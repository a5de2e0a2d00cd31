// Inputs shared by the decoder measurements: seeded token ids, and a warm-up that brings the
// decoder's weights into memory before anything is timed (the checkpoint is memory-mapped, so the
// first pass over each weight would otherwise pay for page faults).
import type { NativeModel } from '../../src/engine/native-model.js';

/** Lowest id of the tokenizer's added (special and OCR) tokens: generated prompts stay below it. */
const FIRST_ADDED_ID = 128000;

/** `count` seeded ordinary-text ids in [2, 128000): the same for the same seed. */
export function randomIds(count: number, seed: number): Int32Array {
  let state = seed >>> 0 || 1;
  return Int32Array.from({ length: count }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return 2 + (state % (FIRST_ADDED_ID - 2));
  });
}

/** Untimed: a 64-token prefill (which routes to nearly every expert of every layer) and one decode step. */
export async function warmUpDecoder(model: NativeModel): Promise<void> {
  const sequence = model.createSequence();
  try {
    const [first] = await model.forward([{ sequence, ids: randomIds(64, 12345), logits: false }]);
    await model.forward([{ sequence, ids: Int32Array.of(first.best), logits: false }]);
  } finally {
    sequence.release();
  }
}
