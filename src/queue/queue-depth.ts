// How much page work each variant's queue holds, for an autoscaler (KEDA's metrics-api scaler reads
// it from the dashboard's GET /queue-depth). A Redis-list scaler cannot count this: BullMQ keeps
// jobs with a priority (every page job has one) in a sorted set, delayed jobs (retries waiting out
// their backoff) in another, and only plain waiting jobs in a list.
import type { Queue } from 'bullmq';

import { VARIANTS, type Variant } from '../vocabulary/ocr-vocabulary.js';
import { fullQueueName, pageQueue } from './queue-names.js';

/** States of a page job that no worker has claimed yet. */
export const UNCLAIMED_STATES = ['waiting', 'prioritized', 'delayed', 'paused'] as const;

export interface PageQueueDepth {
  /** '{scriptorium}:pages-v3' */
  queue: string;
  waiting: number;
  prioritized: number;
  delayed: number;
  paused: number;
  active: number;
  /** Jobs no worker has claimed yet: waiting + prioritized + delayed + paused. */
  unclaimed: number;
  /** unclaimed + active: what needs a worker now or soon. Scale on this, so that workers still reading pages are not taken away. */
  pending: number;
}

/**
 * Counts per state of each variant's page queue, in jobs (a V3 parse-multi job of many pages is one
 * job, and occupies one place in a worker's batch). `pagesOf` gives the BullMQ queue of a variant's page queue.
 */
export async function pageQueueDepths(pagesOf: (variant: Variant) => Queue): Promise<Record<Variant, PageQueueDepth>> {
  const depths = await Promise.all(
    VARIANTS.map(async (variant): Promise<[Variant, PageQueueDepth]> => {
      const counts = await pagesOf(variant).getJobCounts(...UNCLAIMED_STATES, 'active');
      const [waiting, prioritized, delayed, paused, active] = [...UNCLAIMED_STATES, 'active' as const].map((state) => counts[state] ?? 0);
      const unclaimed = waiting + prioritized + delayed + paused;
      return [variant, { queue: fullQueueName(pageQueue(variant)), waiting, prioritized, delayed, paused, active, unclaimed, pending: unclaimed + active }];
    }),
  );
  return Object.fromEntries(depths) as Record<Variant, PageQueueDepth>;
}
