// Where the queue lives: ioredis connection options from a Redis URL (REDIS_URL by default), one
// Redis or a Redis Cluster, the one way every connection is opened from them (BullMQ's included), and
// a reachability check that turns "Redis is not there" into one clear message instead of endless
// reconnect attempts.
import { RedisConnection, createIORedisClient } from 'bullmq';
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';

import { describeCause } from '../storage/storage-error.js';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** How long the reachability check waits for a connection. */
const REACHABILITY_TIMEOUT_MS = 5_000;

const URL_FORM =
  'redis://[user:password@]host[:port][/db], rediss://… for TLS, or redis-cluster://[user:password@]host:port[,host:port…] (rediss-cluster://… for TLS) for a Redis Cluster';

export class RedisConfigError extends Error {
  override readonly name = 'RedisConfigError';
}

/** A connection to one Redis or to a Redis Cluster: the project's own commands take either. */
export type RedisClient = Redis | Cluster;

/**
 * ioredis options for one Redis; for a Redis Cluster, `clusterNodes` lists the nodes to discover it
 * from and the other options apply to every node's connection.
 */
export interface RedisConnectionOptions extends RedisOptions {
  clusterNodes?: ClusterNode[];
}

/** REDIS_URL when set and not blank, else DEFAULT_REDIS_URL. */
export function redisUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.REDIS_URL?.trim() || DEFAULT_REDIS_URL;
}

/**
 * - `client`: queues, flow producers and status reads, whose commands should fail after ioredis's
 *   default 20 retries rather than hang while Redis is down.
 * - `worker`: BullMQ workers and queue events, whose blocking commands must wait for Redis forever
 *   (`maxRetriesPerRequest: null`, which BullMQ requires of them).
 */
export type RedisRole = 'client' | 'worker';

/** ioredis options for `url` (see URL_FORM); throws RedisConfigError for anything else. */
export function redisOptions(url: string, role: RedisRole): RedisConnectionOptions {
  const cluster = /^(rediss?)-cluster:\/\/(.*)$/.exec(url);
  const options = cluster === null ? singleRedisOptions(url) : clusterOptions(url, cluster[1] === 'rediss', cluster[2]);
  if (role === 'worker') options.maxRetriesPerRequest = null;
  return options;
}

function singleRedisOptions(url: string): RedisConnectionOptions {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RedisConfigError(`invalid Redis URL "${url}": use ${URL_FORM}`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new RedisConfigError(`unsupported Redis URL scheme "${parsed.protocol}" in ${url}: use ${URL_FORM}`);
  }
  const dbText = parsed.pathname.replace(/^\//, '');
  const db = dbText === '' ? 0 : Number(dbText);
  if (!Number.isInteger(db) || db < 0) throw new RedisConfigError(`the database in Redis URL ${url} must be a number >= 0, as in redis://host:6379/2`);
  const options: RedisConnectionOptions = {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: parsed.port === '' ? 6379 : Number(parsed.port),
    db,
  };
  if (parsed.username !== '') options.username = decodeURIComponent(parsed.username);
  if (parsed.password !== '') options.password = decodeURIComponent(parsed.password);
  if (parsed.protocol === 'rediss:') options.tls = { servername: options.host };
  return options;
}

/** `rest` is what follows `redis-cluster://`: [user:password@]host:port[,host:port…], no database (a cluster has only 0). */
function clusterOptions(url: string, tls: boolean, rest: string): RedisConnectionOptions {
  const at = rest.lastIndexOf('@');
  const credentials = at < 0 ? '' : rest.slice(0, at);
  const nodesText = (at < 0 ? rest : rest.slice(at + 1)).replace(/\/$/, '');
  if (nodesText.includes('/')) throw new RedisConfigError(`a Redis Cluster has no databases but 0: leave the /db out of ${redactedRedisUrl(url)}`);
  const clusterNodes = nodesText.split(',').map((node) => {
    const match = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d+))?$/.exec(node.trim());
    if (match === null) throw new RedisConfigError(`invalid node "${node}" in Redis Cluster URL ${redactedRedisUrl(url)}: use ${URL_FORM}`);
    return { host: match[1].replace(/^\[(.*)\]$/, '$1'), port: match[2] === undefined ? 6379 : Number(match[2]) };
  });
  const options: RedisConnectionOptions = { clusterNodes };
  if (credentials !== '') {
    const colon = credentials.indexOf(':');
    const username = colon < 0 ? credentials : credentials.slice(0, colon);
    if (username !== '') options.username = decodeURIComponent(username);
    if (colon >= 0) options.password = decodeURIComponent(credentials.slice(colon + 1));
  }
  if (tls) options.tls = {};
  return options;
}

/**
 * A connection from redisOptions' options: a Redis, or a Cluster whose nodes get the options.
 * The cluster's own behaviour follows the options' `lazyConnect`, `enableOfflineQueue` and
 * `retryStrategy` (which, for a cluster, retries reaching the cluster as a whole).
 */
export function connectRedis(options: RedisConnectionOptions): RedisClient {
  const { clusterNodes, ...nodeOptions } = options;
  if (clusterNodes === undefined) return new Redis(nodeOptions);
  const { lazyConnect, enableOfflineQueue, retryStrategy, host: _host, port: _port, db: _db, ...redisOptions } = nodeOptions;
  return new Cluster(clusterNodes, {
    redisOptions,
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(retryStrategy == null ? {} : { clusterRetryStrategy: (times: number) => retryStrategy(times) ?? null }),
  });
}

// BullMQ opens its connections from the options it is given through this documented hook, so that
// queues, workers, flow producers and queue events reach a Redis Cluster too, and close what they
// opened themselves, as with one Redis. BullMQ merges its defaults (host, port, retryStrategy) in.
RedisConnection.clientFactory = (options) => createIORedisClient(connectRedis(options as RedisConnectionOptions));

/** Whether `redis` is a Redis Cluster connection. */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

/** Every key matching the SCAN pattern `match`, on one Redis or on every master of a cluster; no duplicates. */
export async function scanKeys(redis: RedisClient, match: string): Promise<string[]> {
  const keys = new Set<string>();
  for (const node of isCluster(redis) ? redis.nodes('master') : [redis]) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      for (const key of found) keys.add(key);
      cursor = next;
    } while (cursor !== '0');
  }
  return [...keys];
}

/** The part of `key` a Redis Cluster hashes when it has one: between the first '{' and the next '}', if not empty. */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/** The URL without its password, for messages and logs. */
export function redactedRedisUrl(url: string): string {
  const cluster = /^(rediss?-cluster:\/\/)([^@]*)@(.*)$/.exec(url);
  if (cluster !== null) return `${cluster[1]}${cluster[2].replace(/:.*$/, ':***')}@${cluster[3]}`;
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** Resolves once Redis at `url` answers PING; rejects with a message that says what to do otherwise. */
export async function checkRedisReachable(url: string): Promise<void> {
  const client = connectRedis({
    ...redisOptions(url, 'client'),
    lazyConnect: true,
    connectTimeout: REACHABILITY_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // The socket's error (ECONNREFUSED, ENOTFOUND, …) arrives as an event; connect() only says "Connection is closed."
  let socketError: unknown;
  client.on('error', (error: unknown) => {
    socketError = error;
  });
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    throw new RedisConfigError(
      `cannot reach Redis at ${redactedRedisUrl(url)} (${describeCause(socketError ?? error)}): start one (redis-server), point REDIS_URL at yours, ` +
        'or use `scriptorium run`, which starts a private one',
    );
  } finally {
    client.disconnect();
  }
}
