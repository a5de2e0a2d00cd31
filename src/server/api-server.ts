// `scriptorium serve`: one Express server for the HTTP API, its OpenAPI document, the queue
// dashboard and the page viewer. Only /healthz, /readyz, the viewer's login form and its static files
// answer without an API key; every other request needs one of the configured keys (under /viewer a
// browser may instead present the session its login opened), counts against that key's rate limit,
// and is logged with the key's name. Submissions are admitted against the queue's capacity and the
// key's quotas (submit-admission.ts), which GET /v1/capacity reports.
import { Queue } from 'bullmq';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';

import type { Variant } from '../vocabulary/ocr-vocabulary.js';
import { DOCUMENTS, type QueueName } from '../queue/queue-names.js';
import { connectRedis, redactedRedisUrl, redisOptions } from '../queue/redis.js';
import type { Storage } from '../storage/storage.js';
import { matchApiKey, presentedApiKey, type ApiKey } from './api-keys.js';
import type { ApiError, CapacityAnswer, HealthAnswer, ReadinessAnswer } from './api-types.js';
import { DocumentCallbacks, type CallbackSettings } from './document-callbacks.js';
import { DocumentEvents } from './document-events.js';
import { documentRoutes } from './document-routes.js';
import { documentStatus, type DocumentStatusSources } from './document-status.js';
import { HttpError } from './http-error.js';
import { serveApp, type ServedApp } from './listen.js';
import { OPENAPI_DOCUMENT } from './openapi.js';
import { queueDashboard } from './queue-dashboard.js';
import { countRequest, DEFAULT_RATE_LIMIT, type RateLimit } from './rate-limit.js';
import { SubmitAdmission } from './submit-admission.js';
import { RedisHealthProbe } from '../queue/redis-health.js';
import { PageImageCache } from './page-image-cache.js';
import { loginPage, VIEWER_PATH } from './viewer-pages.js';
import { viewerPublicRoutes, viewerRoutes } from './viewer-routes.js';
import { checkSameOrigin, ViewerSessions } from './viewer-sessions.js';
import { RedisDataWatch, redisDataLossMessage } from '../queue/redis-data-watch.js';

export const DEFAULT_MAX_DOCUMENT_BYTES = 256 * 1024 * 1024;
/** JSON request bodies: a submission by reference is a few hundred bytes. */
const MAX_JSON_BODY = '16kb';
/** How long /readyz waits for the storage. */
const STORAGE_PROBE_TIMEOUT_MS = 3_000;
const DASHBOARD_PATH = '/dashboard';
/** The login form's body: one key. */
const MAX_FORM_BODY = '4kb';
/** Rendered page images the viewer keeps in memory. */
export const VIEWER_IMAGE_CACHE_BYTES = 64 * 1024 * 1024;

export interface ApiServerOptions {
  host: string;
  /** 0 picks a free port; `url` says which. */
  port: number;
  redisUrl: string;
  /** Where sources are staged and results are read; workers use the same one. */
  storage: Storage;
  apiKeys: readonly ApiKey[];
  /** Default DEFAULT_RATE_LIMIT (600 requests a minute per key). */
  rateLimit?: RateLimit;
  /** Largest document uploaded, fetched or named by its s3:// URI. Default DEFAULT_MAX_DOCUMENT_BYTES. */
  maxDocumentBytes?: number;
  /** Documents of more pages are refused. Default: no limit. */
  maxDocumentPages?: number;
  /** The variant of submissions that name none. */
  defaultVariant: Variant;
  /** Tries per page. Default: enqueue's. */
  attempts?: number;
  /** Hosts whose https URLs may be submitted. Default: none. */
  fetchHosts?: readonly string[];
  /** Callback hosts and signing secret. Default: no callbacks (a submission naming one is refused). */
  callbacks?: CallbackSettings;
  /** Page jobs each variant's page queue may hold before submissions are answered 429. Default: no limit. */
  maxQueuedPages?: number;
  logger: Logger;
}

/** close() stops accepting requests, ends open ones and closes the Redis connections. */
export type ApiServer = ServedApp;

export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  const { storage, logger } = options;
  const health = await RedisHealthProbe.open(options.redisUrl, logger);
  const redis = connectRedis(redisOptions(options.redisUrl, 'client'));
  redis.on('error', () => undefined); // the health connection reports outages
  // Redis emptied under the server: it keeps serving and says what to do.
  const dataWatch = await RedisDataWatch.start(redis, {
    onLost: (loss) => logger.error({ redis: redactedRedisUrl(options.redisUrl), storage: storage.url, ...loss }, redisDataLossMessage(storage.url)),
  });
  const documents = openQueue(DOCUMENTS, options.redisUrl);
  const board = queueDashboard(options.redisUrl, DASHBOARD_PATH);
  const statusSources: DocumentStatusSources = { documents, pages: board.pages, redis, storage };
  const events = await DocumentEvents.start(redisOptions(options.redisUrl, 'worker'));
  const callbacks =
    options.callbacks === undefined
      ? undefined
      : await DocumentCallbacks.start({
          redisUrl: options.redisUrl,
          settings: { ...options.callbacks, hosts: options.callbacks.hosts.map((host) => host.toLowerCase()) },
          statusOf: (docId) => documentStatus(docId, statusSources),
          events,
          logger,
        });
  const rateLimit = options.rateLimit ?? DEFAULT_RATE_LIMIT;
  const admission = await SubmitAdmission.start(options.redisUrl, redis, options.apiKeys, options.maxQueuedPages);

  const app = express();
  app.disable('x-powered-by');
  app.use(requestLog(logger));
  app.get('/healthz', (_request, response) => {
    const answer: HealthAnswer = { status: 'ok' };
    response.json(answer);
  });
  app.get('/readyz', async (_request, response) => {
    const answer: ReadinessAnswer = { redis: await health.ping(), storage: await storageReachable(storage) };
    response.status(answer.redis === 'ok' && answer.storage === 'ok' ? 200 : 503).json(answer);
  });
  const sessions = new ViewerSessions(redis, options.apiKeys, VIEWER_PATH);
  app.use(viewerPublicRoutes());
  app.get(`${VIEWER_PATH}/login`, (_request, response) => {
    response.type('html').send(loginPage());
  });
  app.post(`${VIEWER_PATH}/login`, express.urlencoded({ extended: false, limit: MAX_FORM_BODY }), async (request, response) => {
    checkSameOrigin(request);
    const presented: unknown = (request.body as Record<string, unknown> | undefined)?.key;
    const key = typeof presented === 'string' ? matchApiKey(options.apiKeys, presented) : undefined;
    if (key === undefined) {
      response.status(401).type('html').send(loginPage('That is not a configured API key.'));
      return;
    }
    response.locals.apiKey = key;
    response.set('set-cookie', await sessions.open(key, request)).redirect(303, `${VIEWER_PATH}/`);
  });
  app.use(async (request, response, next) => {
    const inViewer = request.path === VIEWER_PATH || request.path.startsWith(`${VIEWER_PATH}/`);
    const key =
      matchApiKey(options.apiKeys, presentedApiKey(request.headers.authorization) ?? '') ?? (inViewer ? await sessions.keyOf(request) : undefined);
    if (key === undefined && inViewer) {
      response.status(401).type('html').send(loginPage());
      return;
    }
    if (key === undefined) {
      // Browsers ask for a key (as the password) only when told Basic; API clients send Bearer.
      const challenge = request.path.startsWith(DASHBOARD_PATH) ? 'Basic realm="scriptorium", charset="UTF-8"' : 'Bearer realm="scriptorium"';
      throw new HttpError(401, 'send a configured API key: Authorization: Bearer <key>', { 'WWW-Authenticate': challenge });
    }
    response.locals.apiKey = key;
    const decision = await countRequest(redis, key.name, rateLimit);
    if (!decision.allowed) {
      throw new HttpError(429, `over the rate limit of ${rateLimit.requests} requests per ${rateLimit.windowMs / 1000} s for this key`, {
        'Retry-After': String(decision.retryAfterSeconds),
      });
    }
    next();
  });
  app.use(express.json({ limit: MAX_JSON_BODY }));
  app.get('/openapi.json', (_request, response) => {
    response.json(OPENAPI_DOCUMENT);
  });
  app.get('/v1/capacity', async (_request, response) => {
    const answer: CapacityAnswer = await admission.capacity(response.locals.apiKey);
    response.json(answer);
  });
  app.use(
    documentRoutes({
      submit: {
        storage,
        connection: redisOptions(options.redisUrl, 'client'),
        defaultVariant: options.defaultVariant,
        attempts: options.attempts,
        maxDocumentBytes: options.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES,
        maxDocumentPages: options.maxDocumentPages,
        fetchHosts: (options.fetchHosts ?? []).map((host) => host.toLowerCase()),
        callbacks,
        admission,
      },
      status: statusSources,
      events,
    }),
  );
  app.use(
    viewerRoutes({
      storage,
      retry: { connection: redisOptions(options.redisUrl, 'client'), attempts: options.attempts },
      images: new PageImageCache(VIEWER_IMAGE_CACHE_BYTES),
      logger,
    }),
  );
  app.use(DASHBOARD_PATH, board.router);
  app.use(() => {
    throw new HttpError(404, 'no such endpoint: see /openapi.json');
  });
  app.use(errorAnswer(logger));

  const closeConnections = async () => {
    await callbacks?.close();
    await events.close();
    await admission.close();
    health.close();
    dataWatch.stop();
    redis.disconnect();
    await Promise.all([documents.close(), board.close()]);
  };
  const served = await serveApp(app, options.host, options.port, closeConnections);
  const { url } = served;
  logger.info({ url, redis: redactedRedisUrl(options.redisUrl), storage: storage.url, keys: options.apiKeys.length }, `serving the API at ${url}`);
  return served;
}

function openQueue(queue: QueueName, redisUrl: string): Queue {
  const opened = new Queue(queue.name, { connection: redisOptions(redisUrl, 'client'), prefix: queue.prefix });
  opened.on('error', () => undefined); // the health connection reports outages
  return opened;
}

/** Whether the storage answers: a lookup of a key that need not exist. */
async function storageReachable(storage: Storage): Promise<'ok' | 'unreachable'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), STORAGE_PROBE_TIMEOUT_MS)));
  try {
    const answered = await Promise.race([storage.exists('readyz-probe').then(() => true), timeout]);
    return answered ? 'ok' : 'unreachable';
  } catch {
    return 'unreachable';
  } finally {
    clearTimeout(timer);
  }
}

/** One log line per request, with the key's name (never the key) and any docId in the path. */
export function requestLog(logger: Logger) {
  return (request: Request, response: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    response.on('finish', () => {
      const docId = /^\/(?:v1|viewer)\/documents\/([0-9a-f]{32})/.exec(request.path)?.[1];
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      logger.info(
        { method: request.method, path: request.path, status: response.statusCode, key: response.locals.apiKey?.name, docId, ms: Math.round(ms) },
        'request',
      );
    });
    next();
  };
}

/** HttpErrors and body-parser's errors answer with their status and message; anything else is a logged 500. */
export function errorAnswer(logger: Logger) {
  return (error: unknown, request: Request, response: Response, _next: NextFunction) => {
    let status = 500;
    let message = 'internal error: see the server log';
    let details = {};
    if (error instanceof HttpError) {
      status = error.status;
      message = error.message;
      details = error.details;
      response.set(error.headers);
    } else if (isClientError(error)) {
      status = error.status;
      message = error.type === 'entity.too.large' ? `the request body is larger than ${MAX_JSON_BODY}` : error.message;
    } else {
      logger.error({ err: error, method: request.method, path: request.path }, 'request failed');
    }
    if (response.headersSent) return;
    const answer: ApiError = { ...details, error: message };
    response.status(status).json(answer);
  };
}

function isClientError(error: unknown): error is { status: number; type?: string; message: string } {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' && status >= 400 && status < 500;
}
