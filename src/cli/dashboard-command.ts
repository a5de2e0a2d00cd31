// `scriptorium dashboard`: bull-board over the documents queue and every variant's page queue (read-write, so failed
// jobs can be retried from the browser), GET /healthz, which says whether Redis answers PING, and
// GET /queue-depth, the page work waiting per variant for an autoscaler (KEDA's metrics-api scaler).
import express from 'express';
import type { Logger } from 'pino';

import { pageQueueDepths } from '../queue/queue-depth.js';
import { checkRedisReachable, redactedRedisUrl, redisUrlFromEnv } from '../queue/redis.js';
import { RedisHealthProbe } from '../queue/redis-health.js';
import { serveApp, type ServedApp } from '../server/listen.js';
import { queueDashboard } from '../server/queue-dashboard.js';
import { commandLogger } from './cli-logger.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { port, text } from './options.js';
import { serverStopMessages, shutdownSignal } from './shutdown-signals.js';

const USAGE = `Usage: scriptorium dashboard [--host H] [--port P]

Serves the queue dashboard (bull-board) at http://H:P/, GET /healthz: 200 {"redis":"ok"} while
Redis answers PING, 503 otherwise, and GET /queue-depth: per variant, the page jobs not yet claimed
(waiting, prioritized, delayed, paused), those being read (active) and their sum (pending), as JSON
{"v3":{"unclaimed":…,"active":…,"pending":…,…},…} for an autoscaler. Jobs can be retried, promoted and removed from the page, and
there is no login: keep --host on loopback unless an authenticating proxy stands in front.

  --host H   address to listen on (default 127.0.0.1)
  --port P   port to listen on (default $DASHBOARD_PORT, else 3000)

Redis is $REDIS_URL (default redis://127.0.0.1:6379).`;

const DEFAULT_HOST = '127.0.0.1';
const DEFAULT_PORT = 3000;

export interface DashboardOptions {
  /** Default: REDIS_URL, else redis://127.0.0.1:6379. */
  redisUrl?: string;
  host: string;
  /** 0 picks a free port; `url` says which. */
  port: number;
  /** Default: commandLogger('info') (JSON lines on stderr). */
  logger?: Logger;
}

/** close() stops accepting requests, ends open ones and closes the Redis connections. */
export type Dashboard = ServedApp;

const OPTIONS = {
  host: text().default(DEFAULT_HOST),
  port: port({ anyFreePort: true }).orEnv('DASHBOARD_PORT').default(DEFAULT_PORT),
};

export const dashboardCommand = defineCommand({ usage: USAGE, options: OPTIONS, run: runDashboard });

async function runDashboard({ options }: CommandLine<typeof OPTIONS>): Promise<number> {
  const logger = commandLogger('info');
  const dashboard = await startDashboard({ ...options, logger });
  const signal = await shutdownSignal(serverStopMessages('the dashboard'));
  logger.info({ signal }, 'stopping the dashboard');
  await dashboard.close();
  return 0;
}

export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const redisUrl = options.redisUrl ?? redisUrlFromEnv();
  const logger = options.logger ?? commandLogger('info');
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
