// Summaries of per-page stage times for document.json: the sum and nearest-rank percentiles.

/** Sum, percentiles and maximum of one stage's times in milliseconds (DocumentResultJson.timings_ms). */
export interface StageSummary {
  total: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/**
 * Nearest-rank percentile of ascending `sorted` values: the smallest value with at least p% of the
 * values at or below it, sorted[ceil(p / 100 · n) − 1]. Always one of the values, never interpolated.
 * 0 for no values.
 */
export function nearestRankPercentile(sorted: readonly number[], p: number): number {
  if (!(p > 0 && p <= 100)) throw new RangeError(`percentile must be in (0, 100], got ${p}`);
  if (sorted.length === 0) return 0;
  // p · n first: (p / 100) · n can land just above an integer (0.07 · 100 = 7.000000000000001).
  return sorted[Math.ceil((p * sorted.length) / 100) - 1];
}

/** Summary of stage times in any order; all zeros for no values. The total is rounded to 0.1 ms. */
export function summarizeStageTimes(values: readonly number[]): StageSummary {
  const sorted = [...values].sort((a, b) => a - b);
  const total = sorted.reduce((sum, value) => sum + value, 0);
  return {
    total: Math.round(total * 10) / 10,
    p50: nearestRankPercentile(sorted, 50),
    p90: nearestRankPercentile(sorted, 90),
    p99: nearestRankPercentile(sorted, 99),
    max: sorted.length === 0 ? 0 : sorted[sorted.length - 1],
  };
}
