// `scriptorium dashboard`: its options, then the queue dashboard of src/server/dashboard-server.ts
// (bull-board, GET /healthz, GET /queue-depth) until SIGTERM or SIGINT.
import { redisUrlFromEnv } from '../queue/redis.js';
import { startDashboard } from '../server/dashboard-server.js';
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

const OPTIONS = {
  host: text().default(DEFAULT_HOST),
  port: port({ anyFreePort: true }).orEnv('DASHBOARD_PORT').default(DEFAULT_PORT),
};

export const dashboardCommand = defineCommand({ usage: USAGE, options: OPTIONS, run: runDashboard });

async function runDashboard({ options }: CommandLine<typeof OPTIONS>): Promise<number> {
  const logger = commandLogger('info');
  const dashboard = await startDashboard({ ...options, redisUrl: redisUrlFromEnv(), logger });
  const signal = await shutdownSignal(serverStopMessages('the dashboard'));
  logger.info({ signal }, 'stopping the dashboard');
  await dashboard.close();
  return 0;
}
