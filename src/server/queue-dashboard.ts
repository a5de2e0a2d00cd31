// bull-board over the documents and pages queues (read-write: failed jobs can be retried from the
// page), as an Express router: served alone by `scriptorium dashboard` and under /dashboard, behind
// the API keys, by `scriptorium serve`.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Queue } from 'bullmq';
import type { Router } from 'express';

import { DOCUMENTS_QUEUE, PAGES_QUEUE } from '../jobs/job-types.js';
import { DOCUMENTS, PAGES, type QueueName } from '../queue/queue-names.js';
import { redisOptions } from '../queue/redis.js';

export interface QueueDashboard {
  router: Router;
  /** Closes the queues' Redis connections. */
  close(): Promise<void>;
}

/** `basePath`: where the router is mounted ('/' or '/dashboard'), for the page's own links. */
export function queueDashboard(redisUrl: string, basePath: string): QueueDashboard {
  const queues = [openQueue(DOCUMENTS, redisUrl), openQueue(PAGES, redisUrl)];
  // Whoever serves the board reports Redis outages; the queues' own errors would only repeat it.
  for (const queue of queues) queue.on('error', () => undefined);
  const board = new ExpressAdapter();
  board.setBasePath(basePath);
  createBullBoard({
    queues: [new BullMQAdapter(queues[0], { displayName: DOCUMENTS_QUEUE }), new BullMQAdapter(queues[1], { displayName: PAGES_QUEUE })],
    serverAdapter: board,
  });
  return {
    router: board.getRouter() as Router,
    close: async () => {
      await Promise.all(queues.map((queue) => queue.close()));
    },
  };
}

function openQueue(queue: QueueName, redisUrl: string): Queue {
  return new Queue(queue.name, { connection: redisOptions(redisUrl, 'client'), prefix: queue.prefix });
}
