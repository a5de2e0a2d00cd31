// Events POSTed over HTTP: MinIO's webhook target (`auth_token` is sent as `Authorization: Bearer
// <token>`), or any sender that signs the raw body with HMAC-SHA256 (`X-Scriptorium-Signature:
// sha256=<hex>`). Both are checked in constant time against one shared secret; a request without valid
// auth is answered 401 and enqueues nothing. The answer is 200 only once the documents are enqueued,
// 503 when enqueueing failed (the sender retries), 400 for a body that is no notification.
//
//   POST /events    the notification JSON
//   HEAD /events    200, for senders that probe the endpoint before sending (MinIO does)
//   GET  /healthz   200 "ok"
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Logger } from 'pino';

import { S3NotificationError } from './s3-notifications.js';
import type { S3EventEnqueuer } from './s3-event-enqueuer.js';

export const EVENTS_PATH = '/events';
/** X-Scriptorium-Signature, as node names headers. */
const SIGNATURE_HEADER = 'x-scriptorium-signature';

/** Far above any S3 notification (a few KiB per record). Default for maxBodyBytes. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export interface WebhookSourceOptions {
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /** 0 for a free port. */
  port: number;
  /** The bearer token, and the HMAC key of signed bodies. Never logged. */
  secret: string;
  enqueuer: Pick<S3EventEnqueuer, 'enqueueNotification'>;
  logger: Logger;
  /** Larger bodies are refused with 413. Default DEFAULT_MAX_BODY_BYTES. */
  maxBodyBytes?: number;
}

export interface WebhookSource {
  /** http://host:port, the port resolved. */
  readonly url: string;
  readonly port: number;
  /** Stops accepting requests and waits for those in hand to be answered. */
  close(): Promise<void>;
}

export async function startWebhookSource(options: WebhookSourceOptions): Promise<WebhookSource> {
  if (options.secret === '') throw new Error('the webhook needs a secret: an unauthenticated endpoint would let anyone queue work');
  const host = options.host ?? '127.0.0.1';
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const logger = options.logger.child({ source: 'webhook' });
  let requests = 0;

  async function receive(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://webhook').pathname;
    if (path === '/healthz') {
      return request.method === 'GET' || request.method === 'HEAD' ? reply(response, 200, { status: 'ok' }) : refuseMethod(response, 'GET');
    }
    if (path !== EVENTS_PATH) return reply(response, 404, { error: `no such path: POST notifications to ${EVENTS_PATH}` });
    if (request.method === 'HEAD') return reply(response, 200, undefined);
    if (request.method !== 'POST') return refuseMethod(response, 'POST, HEAD');

    const body = await readBody(request, maxBodyBytes);
    if (body === undefined) {
      response.setHeader('Connection', 'close');
      return reply(response, 413, { error: `the body is larger than ${maxBodyBytes} bytes` });
    }
    if (!isAuthorized(request, body, options.secret)) {
      logger.warn({ remote: request.socket.remoteAddress }, 'refused a request without valid authorization');
      response.setHeader('WWW-Authenticate', 'Bearer');
      return reply(response, 401, { error: 'send Authorization: Bearer <secret> or X-Scriptorium-Signature: sha256=<HMAC-SHA256 of the body, hex>' });
    }
    const log = logger.child({ request: ++requests });
    try {
      const documents = await options.enqueuer.enqueueNotification(body.toString('utf8'), log);
      return reply(response, 200, { documents });
    } catch (error) {
      if (error instanceof S3NotificationError) {
        log.warn({ reason: error.message }, 'refused a body that is no S3 event notification');
        return reply(response, 400, { error: error.message });
      }
      log.error({ err: error }, 'enqueueing failed; answered 503 so that the sender retries');
      return reply(response, 503, { error: 'the documents could not be enqueued now; send the notification again later' });
    }
  }

  const server = createServer((request, response) => {
    receive(request, response).catch((error: unknown) => {
      logger.error({ err: error }, 'request failed');
      if (!response.headersSent) reply(response, 500, { error: 'internal error' });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger.info({ url: `${url}${EVENTS_PATH}` }, 'listening for event notifications');
  return {
    url,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      }),
  };
}

/** The whole body, or undefined once it exceeds `limit` bytes (the rest is not read). */
async function readBody(request: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  if (Number(request.headers['content-length'] ?? 0) > limit) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** A bearer token equal to the secret, or a body signature made with it; both compared in constant time. */
export function isAuthorized(request: Pick<IncomingMessage, 'headers'>, body: Buffer, secret: string): boolean {
  const bearer = /^Bearer\s+(.+?)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
  // Equal-length digests: comparing them takes the same time whatever the token's length.
  if (bearer !== undefined && timingSafeEqual(sha256(bearer), sha256(secret))) return true;
  const signature = /^sha256=([0-9a-f]{64})$/i.exec(String(request.headers[SIGNATURE_HEADER] ?? ''))?.[1];
  return signature !== undefined && timingSafeEqual(Buffer.from(signature, 'hex'), createHmac('sha256', secret).update(body).digest());
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function refuseMethod(response: ServerResponse, allowed: string): void {
  response.setHeader('Allow', allowed);
  reply(response, 405, { error: `use ${allowed}` });
}

function reply(response: ServerResponse, status: number, body: object | undefined): void {
  if (body === undefined) {
    response.writeHead(status).end();
    return;
  }
  const text = `${JSON.stringify(body)}\n`;
  response.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
}
