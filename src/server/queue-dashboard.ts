// bull-board over the documents queue and every variant's page queue (read-write: failed jobs can be
// retried from the page), as an Express router: served alone by `scriptorium dashboard`
// (dashboard-server.ts) and under /dashboard, behind the API keys, by `scriptorium serve`.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Queue } from 'bullmq';
import type { Router } from 'express';

import { VARIANTS, type Variant } from '../vocabulary/ocr-vocabulary.js';
import { DOCUMENTS, fullQueueName, PAGE_QUEUES, type QueueName } from '../queue/queue-names.js';
import { redisOptions } from '../queue/redis.js';

export interface QueueDashboard {
  router: Router;
  /** The board's queue of `variant`'s page jobs (for queue depths). */
  pages(variant: Variant): Queue;
  /** Closes the queues' Redis connections. */
  close(): Promise<void>;
}

/** `basePath`: where the router is mounted ('/' or '/dashboard'), for the page's own links. */
export function queueDashboard(redisUrl: string, basePath: string): QueueDashboard {
  const names = [DOCUMENTS, ...PAGE_QUEUES];
  const queues = names.map((name) => openQueue(name, redisUrl));
  // Whoever serves the board reports Redis outages; the queues' own errors would only repeat it.
  for (const queue of queues) queue.on('error', () => undefined);
  const board = new ExpressAdapter();
  board.setBasePath(basePath);
  createBullBoard({
    queues: queues.map((queue, i) => new BullMQAdapter(queue, { displayName: fullQueueName(names[i]) })),
    serverAdapter: board,
  });
  return {
    router: board.getRouter() as Router,
    pages: (variant) => queues[1 + VARIANTS.indexOf(variant)],
    close: async () => {
      await Promise.all(queues.map((queue) => queue.close()));
    },
  };
}

function openQueue(queue: QueueName, redisUrl: string): Queue {
  return new Queue(queue.name, { connection: redisOptions(redisUrl, 'client'), prefix: queue.prefix });
}
