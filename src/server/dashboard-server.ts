// The app `scriptorium dashboard` serves: bull-board over the documents queue and every variant's page
// queue (read-write, so failed jobs can be retried from the browser), GET /healthz, which says whether
// Redis answers PING, and GET /queue-depth, the page work waiting per variant for an autoscaler (KEDA's
// metrics-api scaler).
import express from 'express';
import type { Logger } from 'pino';

import { pageQueueDepths } from '../queue/queue-depth.js';
import { checkRedisReachable, redactedRedisUrl } from '../queue/redis.js';
import { RedisHealthProbe } from '../queue/redis-health.js';
import { serveApp, type ServedApp } from './listen.js';
import { queueDashboard } from './queue-dashboard.js';

export interface DashboardOptions {
  redisUrl: string;
  host: string;
  /** 0 picks a free port; `url` says which. */
  port: number;
  logger: Logger;
}

/** close() stops accepting requests, ends open ones and closes the Redis connections. */
export type Dashboard = ServedApp;

export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const { redisUrl, logger } = options;
  await checkRedisReachable(redisUrl);

  const health = await RedisHealthProbe.open(redisUrl, logger);
  const board = queueDashboard(redisUrl, '/');

  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', async (_request, response) => {
    const redis = await health.ping();
    response.status(redis === 'ok' ? 200 : 503).json({ redis });
  });
  app.get('/queue-depth', async (_request, response) => {
    try {
      response.json(await pageQueueDepths(board.pages));
    } catch (error) {
      logger.warn({ err: error }, 'queue depth: cannot read the page queues');
      response.status(503).json({ error: 'cannot read the page queues from Redis' });
    }
  });
  app.use('/', board.router);

  const served = await serveApp(app, options.host, options.port, async () => {
    health.close();
    await board.close();
  });
  logger.info({ url: served.url, redis: redactedRedisUrl(redisUrl) }, `dashboard at ${served.url}`);
  return served;
}
