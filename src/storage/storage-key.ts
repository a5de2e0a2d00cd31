// Storage keys: relative '/'-separated paths below a storage root, checked the same way on every
// backend so that a key that works on file:// also works on s3:// and cannot escape the root.
import { StorageError } from './storage-error.js';

/** S3's limit on the UTF-8 length of a key. */
const MAX_KEY_BYTES = 1024;

const KEY_RULES =
  "keys are relative '/'-separated paths with no empty, '.' or '..' segments, no backslashes or NUL characters, at most 1024 UTF-8 bytes";

/** Returns `key` unchanged if it is a valid key; throws a permanent StorageError naming the broken rule otherwise. */
export function checkKey(key: string): string {
  const problem = keyProblem(key);
  if (problem !== undefined) throw invalid('key', key, problem);
  return key;
}

/**
 * Returns `prefix` unchanged if it is a valid listing prefix: '' (everything), or the start of a
 * key, which may end with '/' ('results/') or in the middle of a segment ('results/ab').
 */
export function checkPrefix(prefix: string): string {
  if (prefix === '') return prefix;
  const problem = keyProblem(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
  if (problem !== undefined) throw invalid('prefix', prefix, problem);
  return prefix;
}

/**
 * Joins key parts with '/' and checks the result: joinKey('reports', name, 'part/0001.md').
 * A part may itself contain '/'; empty parts, absolute parts and '..' are rejected.
 */
export function joinKey(...parts: string[]): string {
  return checkKey(parts.join('/'));
}

function keyProblem(key: string): string | undefined {
  if (key === '') return 'it is empty';
  if (key.startsWith('/')) return "it is absolute (starts with '/')";
  if (key.includes('\\')) return "it contains a backslash (use '/' between segments)";
  if (key.includes('\0')) return 'it contains a NUL character';
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) return `it is longer than ${MAX_KEY_BYTES} UTF-8 bytes`;
  for (const segment of key.split('/')) {
    if (segment === '') return "it has an empty segment ('//' or a trailing '/')";
    if (segment === '.' || segment === '..') return `it has a '${segment}' segment`;
  }
  return undefined;
}

function invalid(what: 'key' | 'prefix', value: string, problem: string): StorageError {
  return new StorageError('permanent', `invalid storage ${what} ${JSON.stringify(value)}: ${problem}; ${KEY_RULES}`, {
    key: value,
  });
}
