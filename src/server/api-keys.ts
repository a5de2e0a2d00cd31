// API keys of `scriptorium serve`: configured as names with the sha256 of each key (never the key
// itself), checked by hashing what a request presents and comparing it in constant time with every
// configured hash, so neither the answer's timing nor the configuration reveals a key.
import { createHash, timingSafeEqual } from 'node:crypto';

export interface ApiKey {
  /** Names the key in logs and rate limits; the key itself is never logged. */
  name: string;
  /** sha256 of the key's UTF-8 bytes. */
  sha256: Buffer;
}

export const API_KEYS_FORMAT = 'NAME:sha256:HEX[,NAME:sha256:HEX…], HEX being the 64-digit sha256 of the key (printf %s "$KEY" | sha256sum)';

/** Parses SCRIPTORIUM_API_KEYS; throws a message naming the entry that is wrong. */
export function parseApiKeys(config: string): ApiKey[] {
  const keys: ApiKey[] = [];
  for (const entry of config.split(',').map((part) => part.trim()).filter((part) => part !== '')) {
    const match = /^([A-Za-z0-9_.-]{1,64}):sha256:([0-9a-fA-F]{64})$/.exec(entry);
    if (match === null) throw new Error(`API key entry "${entry.replace(/:.*/, ':…')}" is malformed: use ${API_KEYS_FORMAT}`);
    if (keys.some((key) => key.name === match[1])) throw new Error(`API key name "${match[1]}" is given twice`);
    keys.push({ name: match[1], sha256: Buffer.from(match[2], 'hex') });
  }
  if (keys.length === 0) throw new Error(`no API keys are configured: set SCRIPTORIUM_API_KEYS to ${API_KEYS_FORMAT}`);
  return keys;
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
