// Summaries of repeated measurements.

/** The median of `values`: the middle one, or the mean of the middle two for an even count. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Element-wise median of equally long series: out[i] = median(series[0][i], series[1][i], ...). */
export function medianSeries(series: readonly (readonly number[])[]): number[] {
  if (series.length === 0) throw new Error('median of no series');
  const length = series[0].length;
  if (series.some((s) => s.length !== length)) throw new Error('median of series of unequal lengths');
  return Array.from({ length }, (_, i) => median(series.map((s) => s[i])));
}
