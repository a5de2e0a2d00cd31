// Browser sessions of the viewer under `serve`: a person sends an API key once, through the login
// form, and gets a session cookie. The session id is 32 random bytes; Redis keeps only its sha256
// (scriptorium:viewer-session:<hex>) with the key's name, expiring after SESSION_TTL_S, so every
// `serve` replica of one Redis knows it and a copy of Redis holds no usable cookie. A session lasts
// only as long as its key is configured. The cookie is HttpOnly, SameSite=Strict, Path=/viewer, and
// Secure when the request came over https (directly or through a proxy saying so).
import { createHash, randomBytes } from 'node:crypto';

import type { Request } from 'express';
import type { RedisClient } from '../queue/redis.js';

import type { ApiKey } from './api-keys.js';
import { HttpError } from './http-error.js';

export const SESSION_COOKIE = 'scriptorium_session';
/** Eight hours: a working day, after which the key is asked for again. */
export const SESSION_TTL_S = 8 * 60 * 60;
const SESSION_ID_BYTES = 32;

export class ViewerSessions {
  constructor(
    private readonly redis: RedisClient,
    private readonly apiKeys: readonly ApiKey[],
    /** The path the cookie is sent for. */
    private readonly path: string,
  ) {}

  /** A new session for `key`; resolves with its Set-Cookie header value. */
  async open(key: ApiKey, request: Request): Promise<string> {
    const id = randomBytes(SESSION_ID_BYTES).toString('base64url');
    await this.redis.set(sessionKey(id), key.name, 'EX', SESSION_TTL_S);
    const secure = isHttps(request) ? '; Secure' : '';
    return `${SESSION_COOKIE}=${id}; Path=${this.path}; Max-Age=${SESSION_TTL_S}; HttpOnly; SameSite=Strict${secure}`;
  }

  /** The configured key of the request's live session, or undefined. */
  async keyOf(request: Request): Promise<ApiKey | undefined> {
    const id = presentedSession(request.headers.cookie);
    if (id === undefined) return undefined;
    const name = await this.redis.get(sessionKey(id));
    return name === null ? undefined : this.apiKeys.find((key) => key.name === name);
  }
}

/** The session id in a Cookie header, or undefined. */
export function presentedSession(cookies: string | undefined): string | undefined {
  for (const cookie of (cookies ?? '').split(';')) {
    const [name, value] = cookie.trim().split('=', 2);
    if (name === SESSION_COOKIE && value !== undefined && /^[A-Za-z0-9_-]{43}$/.test(value)) return value;
  }
  return undefined;
}

/**
 * Refuses a state-changing request sent from another site (CSRF): its Origin must be this server's
 * own scheme and host. Browsers send Origin with every POST; a request without one is refused too.
 * The session cookie's SameSite=Strict already keeps other sites' requests from carrying a session.
 */
export function checkSameOrigin(request: Request): void {
  const origin = request.headers.origin;
  const own = `${isHttps(request) ? 'https' : 'http'}://${request.headers.host ?? ''}`;
  if (origin !== own) throw new HttpError(403, `refused: this form is only accepted from ${own} (the request's Origin is ${origin ?? 'missing'})`);
}

function isHttps(request: Request): boolean {
  return request.protocol === 'https' || request.headers['x-forwarded-proto'] === 'https';
}

function sessionKey(id: string): string {
  return `scriptorium:viewer-session:${createHash('sha256').update(id).digest('hex')}`;
}
