// What is left of the queued work and when it should be through: the job states of unfinished work,
// and the one ETA rule that `scriptorium status` and the API's document status both apply.

/** Page jobs not yet finished: waiting for a worker (or for a retry), or held by one. */
export const UNFINISHED_PAGE_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'paused'] as const;
/** Document jobs not yet assembled: the page states, and waiting for their page jobs. */
export const UNFINISHED_DOCUMENT_STATES = [...UNFINISHED_PAGE_STATES, 'waiting-children'] as const;

/** One kind of work: how much of it is left, and how fast it was completed lately (per minute, 0: not at all). */
export interface WorkLeft {
  left: number;
  perMinute: number;
}

export type TimeLeft =
  | { state: 'nothing-left' }
  | { state: 'no-live-workers' }
  /** A kind with work left completed nothing lately: there is no rate to go by. */
  | { state: 'no-rate' }
  | { state: 'minutes'; minutes: number };

/**
 * When the work of every given kind should be through. Kinds are worked side by side, each at its own
 * rate, so the slowest kind decides: the largest left / perMinute. No ETA without a live worker (the
 * recent rate is then a rate of the past), nor while a kind with work left has no recent rate.
 */
export function timeLeft(work: readonly WorkLeft[], liveWorkers: boolean): TimeLeft {
  const pending = work.filter((kind) => kind.left > 0);
  if (pending.length === 0) return { state: 'nothing-left' };
  if (!liveWorkers) return { state: 'no-live-workers' };
  if (pending.some((kind) => kind.perMinute === 0)) return { state: 'no-rate' };
  return { state: 'minutes', minutes: Math.max(...pending.map((kind) => kind.left / kind.perMinute)) };
}
