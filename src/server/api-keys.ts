// API keys of `scriptorium serve`: configured as names with the sha256 of each key (never the key
// itself), checked by hashing what a request presents and comparing it in constant time with every
// configured hash, so neither the answer's timing nor the configuration reveals a key. Each key may
// also carry its priority class and its quotas (queue/key-quotas.ts).
import { createHash, timingSafeEqual } from 'node:crypto';

import { PRIORITY_CLASSES, type PriorityClass } from '../queue/job-options.js';
import type { KeyQuota } from '../queue/key-quotas.js';

export interface ApiKey {
  /** Names the key in logs, rate limits, quotas and metrics; the key itself is never logged. */
  name: string;
  /** sha256 of the key's UTF-8 bytes. */
  sha256: Buffer;
  quota: KeyQuota;
}

export const API_KEYS_FORMAT =
  'NAME:sha256:HEX[:class=interactive|bulk][:pages-per-day=N][:in-flight=N][,…], HEX being the 64-digit sha256 of the key (printf %s "$KEY" | sha256sum)';

/** Parses SCRIPTORIUM_API_KEYS; throws a message naming the entry that is wrong. */
export function parseApiKeys(config: string): ApiKey[] {
  const keys: ApiKey[] = [];
  for (const entry of config.split(',').map((part) => part.trim()).filter((part) => part !== '')) {
    const match = /^([A-Za-z0-9_.-]{1,64}):sha256:([0-9a-fA-F]{64})((?::[a-z-]+=[^:]*)*)$/.exec(entry);
    if (match === null) throw new Error(`API key entry "${entry.replace(/:.*/, ':…')}" is malformed: use ${API_KEYS_FORMAT}`);
    if (keys.some((key) => key.name === match[1])) throw new Error(`API key name "${match[1]}" is given twice`);
    keys.push({ name: match[1], sha256: Buffer.from(match[2], 'hex'), quota: parseQuota(match[1], match[3]) });
  }
  if (keys.length === 0) throw new Error(`no API keys are configured: set SCRIPTORIUM_API_KEYS to ${API_KEYS_FORMAT}`);
  return keys;
}

/** `:class=bulk:pages-per-day=5000:in-flight=20` (each at most once, in any order); the default class is interactive, without limits. */
function parseQuota(name: string, settings: string): KeyQuota {
  const quota: KeyQuota = { priorityClass: 'interactive' };
  const seen = new Set<string>();
  for (const setting of settings.split(':').slice(1)) {
    const [attribute, value] = setting.split('=');
    const wrong = (what: string) => new Error(`API key "${name}": ${attribute} ${what} (got "${value}")`);
    if (seen.has(attribute)) throw new Error(`API key "${name}": ${attribute} is given twice`);
    seen.add(attribute);
    if (attribute === 'class') {
      if (!(PRIORITY_CLASSES as readonly string[]).includes(value)) throw wrong(`must be one of ${PRIORITY_CLASSES.join(', ')}`);
      quota.priorityClass = value as PriorityClass;
    } else if (attribute === 'pages-per-day' || attribute === 'in-flight') {
      if (!/^[1-9]\d{0,8}$/.test(value)) throw wrong('must be a whole number from 1');
      if (attribute === 'pages-per-day') quota.pagesPerDay = Number(value);
      else quota.documentsInFlight = Number(value);
    } else {
      throw new Error(`API key "${name}": unknown setting "${attribute}": the settings are class, pages-per-day and in-flight`);
    }
  }
  return quota;
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** The configured key that `presented` is, or undefined. Every configured hash is compared, match or not. */
export function matchApiKey(keys: readonly ApiKey[], presented: string): ApiKey | undefined {
  const hash = hashApiKey(presented);
  let found: ApiKey | undefined;
  for (const key of keys) {
    if (timingSafeEqual(hash, key.sha256) && found === undefined) found = key;
  }
  return found;
}

/**
 * The key in an Authorization header: `Bearer KEY`, or for browsers (the dashboard) `Basic` with the
 * key as the password and any user name. undefined when there is none.
 */
export function presentedApiKey(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const [scheme, credentials] = authorization.trim().split(/\s+/, 2);
  if (credentials === undefined) return undefined;
  if (/^bearer$/i.test(scheme)) return credentials;
  if (/^basic$/i.test(scheme)) {
    const decoded = Buffer.from(credentials, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon === -1 ? undefined : decoded.slice(colon + 1);
  }
  return undefined;
}
