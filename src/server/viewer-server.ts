// `scriptorium view`: the page viewer alone, over one storage, for the person at this machine. It
// listens on 127.0.0.1 only and asks for no key; so that no web page the person visits can reach it
// through a name that resolves to 127.0.0.1 (DNS rebinding), it answers only requests addressed to
// 127.0.0.1 or localhost, and its one form (retry) only from its own origin.
import express from 'express';
import type { Logger } from 'pino';

import type { Storage } from '../storage/storage.js';
import { errorAnswer, requestLog, VIEWER_IMAGE_CACHE_BYTES } from './api-server.js';
import { HttpError } from './http-error.js';
import { serveApp, type ServedApp } from './listen.js';
import { PageImageCache } from './page-image-cache.js';
import { VIEWER_PATH } from './viewer-pages.js';
import { viewerPublicRoutes, viewerRoutes, type ViewerSettings } from './viewer-routes.js';

export const VIEWER_HOST = '127.0.0.1';

export interface ViewerServerOptions {
  /** 0 picks a free port; `url` says which. */
  port: number;
  storage: Storage;
  retry: ViewerSettings['retry'];
  logger: Logger;
  /** Closed with the server: the Redis the retry button queues on, if any. */
  closeResources?: () => Promise<void>;
}

export async function startViewerServer(options: ViewerServerOptions): Promise<ServedApp> {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestLog(options.logger));
  app.use((request, _response, next) => {
    const host = request.hostname;
    if (host !== VIEWER_HOST && host !== 'localhost') throw new HttpError(421, `this viewer answers only requests to ${VIEWER_HOST} or localhost, not ${host}`);
    next();
  });
  app.get('/', (_request, response) => response.redirect(303, `${VIEWER_PATH}/`));
  app.use(viewerPublicRoutes());
  app.use(viewerRoutes({ storage: options.storage, retry: options.retry, images: new PageImageCache(VIEWER_IMAGE_CACHE_BYTES), logger: options.logger }));
  app.use(() => {
    throw new HttpError(404, `no such page: the viewer is at ${VIEWER_PATH}/`);
  });
  app.use(errorAnswer(options.logger));
  const served = await serveApp(app, VIEWER_HOST, options.port, options.closeResources ?? (async () => undefined));
  options.logger.info({ url: served.url, storage: options.storage.url }, `the viewer is at ${served.url}viewer/`);
  return served;
}
