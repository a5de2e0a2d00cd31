// The `kvcache` part's figures: per KV-cache storage, the median decode step after the long prefix
// beside the time its bytes (weights plus cache) take at the measured read bandwidth.
import type { KvCacheDtype } from '../../src/engine/native-binding.js';
import type { KvCacheAnswer } from './measure-jobs.js';
import type { MachineCeilings } from './native-probes.js';
import { formatTable } from './report-table.js';
import { median, medianSeries } from './stats.js';
import { bandwidthEfficiency } from './summary.js';

export interface KvCacheSummary {
  variant: string;
  kvCache: KvCacheDtype;
  prefixTokens: number;
  steps: number;
  /** Median over steps of the per-step median over runs. */
  msPerStep: number;
  weightBytes: number;
  cacheBytes: number;
  /** Milliseconds the step's bytes take at the measured read bandwidth. */
  boundMs: number;
  /** boundMs / msPerStep: the share of the bandwidth bound reached. */
  efficiency: number;
  peakRssBytes: number;
}

export function summariseKvCache(answer: KvCacheAnswer, ceilings: MachineCeilings): KvCacheSummary[] {
  return answer.rows.map((row) => {
    const steps = medianSeries(row.stepMs);
    const msPerStep = median(steps);
    const bytes = answer.weightBytes + row.cacheBytes;
    return {
      variant: answer.variant,
      kvCache: row.kvCache,
      prefixTokens: answer.prefixTokens,
      steps: steps.length,
      msPerStep,
      weightBytes: answer.weightBytes,
      cacheBytes: row.cacheBytes,
      boundMs: (bytes / (ceilings.readGBps * 1e9)) * 1000,
      efficiency: bandwidthEfficiency(bytes, msPerStep, ceilings.readGBps),
      peakRssBytes: answer.peakRssBytes,
    };
  });
}

export function kvCacheText(rows: readonly KvCacheSummary[]): string {
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
  return [
    `Decode after a long prefix by KV-cache storage (median step; bound: weights + cache bytes at the read bandwidth)`,
    formatTable(
      ['variant', 'cache', 'prefix', 'weights/step', 'cache/step', 'ms/step', 'ms at bandwidth', '% of bandwidth'],
      rows.map((r) => [
        r.variant,
        r.kvCache,
        String(r.prefixTokens),
        mb(r.weightBytes),
        mb(r.cacheBytes),
        r.msPerStep.toFixed(1),
        r.boundMs.toFixed(1),
        `${(100 * r.efficiency).toFixed(0)}%`,
      ]),
    ),
  ].join('\n');
}
