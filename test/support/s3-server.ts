// An in-process s3rver for tests: listens on 127.0.0.1 (a free port unless one is asked for),
// keeps its objects in a fresh temp directory, and creates the buckets it is given. It can be stopped
// and started again on the same port with the same objects, as an outage would look to clients.
import crypto from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Module, { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** s3rver's built-in access key id and secret: the only credentials it accepts. */
export const S3RVER_SECRET = 'S3RVER';

/** The part of s3rver's (untyped) API used here. */
interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
  on(event: 'event', listener: (notification: S3rverNotification) => void): void;
  httpServer?: Server;
}

/**
 * What s3rver emits after each object is stored, copied or deleted: AWS's notification shape, except
 * that the key is not URL-encoded as S3 encodes it.
 */
export interface S3rverNotification {
  Records: Array<{ eventName: string; eventTime: string; s3: { bucket: { name: string }; object: { key: string; size?: number; eTag?: string } } }>;
}
type S3rverConstructor = new (options: {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
  vhostBuckets: boolean;
  configureBuckets: Array<{ name: string }>;
}) => S3rverInstance;

const S3rver = loadS3rver();
keepFoldersOnDelete();
putObjectsWhole();
conditionalPuts();

export interface S3ServerOptions {
  /** Buckets to create before listening. Default: none. */
  buckets?: string[];
  /** Port to listen on, e.g. to restart a stopped server where clients expect it. Default 0: a free port. */
  port?: number;
}

export interface S3Server {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  port: number;
  /** Where the objects are kept: a temporary folder of its own, removed by close(). */
  directory: string;
  /** Calls `listener` with the notification of every object stored, copied or deleted from now on. */
  onNotification(listener: (notification: S3rverNotification) => void): void;
  /** Drops open connections and stops listening, keeping the objects: clients then see the server down. */
  stop(): Promise<void>;
  /** Listens again on the same port with the same objects, after stop(). */
  start(): Promise<void>;
  /** Drops open connections, stops listening and removes the server's directory. */
  close(): Promise<void>;
}

export async function startS3Server(options: S3ServerOptions = {}): Promise<S3Server> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-s3rver-'));
  const notificationListeners: Array<(notification: S3rverNotification) => void> = [];
  const listen = async (port: number) => {
    const server = new S3rver({
      address: '127.0.0.1',
      port,
      directory,
      silent: true,
      vhostBuckets: false,
      configureBuckets: (options.buckets ?? []).map((name) => ({ name })),
    });
    server.on('event', (notification) => notificationListeners.forEach((listener) => listener(notification)));
    const address = await server.run();
    return { server, port: address.port };
  };
  let running: S3rverInstance | undefined;
  const stop = async () => {
    const server = running;
    running = undefined;
    server?.httpServer?.closeAllConnections(); // kept-alive client sockets would hold close() open
    await server?.close();
  };
  const first = await listen(options.port ?? 0).catch(async (error: unknown) => {
    await rm(directory, { recursive: true, force: true });
    throw error;
  });
  running = first.server;
  const { port } = first;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    directory,
    onNotification(listener) {
      notificationListeners.push(listener);
    },
    stop,
    async start() {
      if (running !== undefined) throw new Error('the S3 server is already running');
      running = (await listen(port)).server;
    },
    async close() {
      await stop();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** Puts s3rver's credentials where the AWS SDK's default chain looks first. */
export function useS3rverCredentials(): void {
  process.env.AWS_ACCESS_KEY_ID = S3RVER_SECRET;
  process.env.AWS_SECRET_ACCESS_KEY = S3RVER_SECRET;
}

/**
 * s3rver 3.7.1 encrypts ListObjectsV2 continuation tokens with DES, which OpenSSL 3 (Node >= 17)
 * only has behind --openssl-legacy-provider: without it every listing longer than one page fails
 * with a 500 "internal error". The tokens are opaque to clients, so s3rver's bucket controller is
 * loaded with a crypto whose 'des' is AES-128-CBC (the 8-byte key and IV repeated to 16 bytes).
 */
function loadS3rver(): S3rverConstructor {
  type Load = (request: string, parent: { filename?: string } | undefined, isMain: boolean) => unknown;
  const loader = Module as unknown as { _load: Load };
  const load = loader._load;
  const bucketController = path.join('s3rver', 'lib', 'controllers', 'bucket.js');
  loader._load = function loadWithTokenCipher(request, parent, isMain) {
    const loaded = load.call(this, request, parent, isMain);
    return request === 'crypto' && parent?.filename?.endsWith(bucketController) ? cryptoWithoutDes() : loaded;
  };
  try {
    return createRequire(import.meta.url)('s3rver') as S3rverConstructor;
  } finally {
    loader._load = load;
  }
}

/**
 * s3rver 3.7.1 removes the folders a delete leaves empty, while a put into one of them may be between
 * making the folder and opening its file: that put's file stream then fails with ENOENT, an 'error'
 * event s3rver does not handle, and the process dies (objects written and deleted under one prefix at
 * once, as page tries are, hit it within minutes). Deletes here leave the folders, which s3rver's
 * listings do not show (they list objects' files), in the server's temporary directory.
 */
function keepFoldersOnDelete(): void {
  type Store = { getResourcePath(bucket: string, key: string, resource: string): string };
  const { prototype } = createRequire(import.meta.url)('s3rver/lib/stores/filesystem.js') as { prototype: Store & { deleteObject(bucket: string, key: string): Promise<void> } };
  prototype.deleteObject = async function deleteObjectFiles(this: Store, bucket: string, key: string): Promise<void> {
    const files = ['object', 'object.md5', 'metadata.json'].map((resource) => this.getResourcePath(bucket, key, resource));
    await Promise.all(files.map((file) => unlink(file).catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? undefined : Promise.reject(error)))));
  };
}

function cryptoWithoutDes(): typeof crypto {
  const doubled = (bytes: Buffer) => Buffer.concat([bytes, bytes]);
  return Object.create(crypto, {
    createCipheriv: {
      value: (algorithm: string, key: Buffer, iv: Buffer) =>
        algorithm === 'des' ? crypto.createCipheriv('aes-128-cbc', doubled(key), doubled(iv)) : crypto.createCipheriv(algorithm, key, iv),
    },
    createDecipheriv: {
      value: (algorithm: string, key: Buffer, iv: Buffer) =>
        algorithm === 'des' ? crypto.createDecipheriv('aes-128-cbc', doubled(key), doubled(iv)) : crypto.createDecipheriv(algorithm, key, iv),
    },
  }) as typeof crypto;
}

/**
 * S3 stores an object whole or not at all: readers see the old object until a put has received its
 * whole body, and a put cut off part-way changes nothing. s3rver 3.7.1 instead truncates the object's
 * file when a put starts and streams the body into it, so a reader meanwhile gets part of the object,
 * and a put whose client dies or whose connection drops leaves the object truncated for good (and
 * its request hanging: the body's 'error' is not handled). Its metadata files are rewritten in place
 * the same way. Here each file is written beside its target under a name of its own, and renamed
 * over the target once complete.
 */
function putObjectsWhole(): void {
  type StoredObject = { bucket: string; key: string; content: Buffer | Readable; metadata: Record<string, string> };
  type Store = { getResourcePath(bucket: string, key: string, resource: string): string };
  type StoreMethods = {
    putObject(this: Store, object: StoredObject): Promise<{ size: number; md5: string }>;
    putMetadata(this: Store, bucket: string, key: string, metadata: Record<string, string>, md5?: string): Promise<void>;
  };
  const require = createRequire(import.meta.url);
  const { prototype } = require('s3rver/lib/stores/filesystem.js') as { prototype: StoreMethods };
  const { ALLOWED_METADATA } = require('s3rver/lib/models/object.js') as { ALLOWED_METADATA: string[] };
  prototype.putObject = async function putObjectWhole(object) {
    const target = this.getResourcePath(object.bucket, object.key, 'object');
    await mkdir(path.dirname(target), { recursive: true });
    const md5 = crypto.createHash('md5');
    let size = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        md5.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    const body = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content;
    await writeWhole(target, (partial) => pipeline(body, counted, createWriteStream(partial)));
    const digest = md5.digest('hex');
    await prototype.putMetadata.call(this, object.bucket, object.key, object.metadata, digest);
    return { size, md5: digest };
  };
  prototype.putMetadata = async function putMetadataWhole(bucket, key, metadata, md5) {
    const kept = Object.entries(metadata).filter(([name]) => ALLOWED_METADATA.includes(name) || name.startsWith('x-amz-meta-'));
    if (md5 !== undefined) await writeWhole(this.getResourcePath(bucket, key, 'object.md5'), (partial) => writeFile(partial, md5));
    await writeWhole(this.getResourcePath(bucket, key, 'metadata.json'), (partial) => writeFile(partial, JSON.stringify(Object.fromEntries(kept), null, 2)));
  };
}

/**
 * S3 refuses a PutObject whose If-None-Match: * finds an object, or whose If-Match names an ETag
 * other than the object's (412 PreconditionFailed; 404 NoSuchKey when If-Match finds no object).
 * s3rver 3.7.1 ignores both headers. Here the conditional puts to one key are checked and stored
 * one at a time, so that of racing writers with the same condition one succeeds, as on S3.
 */
function conditionalPuts(): void {
  type Store = { getResourcePath(bucket: string, key: string, resource: string): string };
  type Context = { params: { bucket: string; key: string }; headers: Record<string, string | undefined>; store: Store };
  type S3ErrorConstructor = new (code: string, message: string, detail?: Record<string, string>) => Error;
  const require = createRequire(import.meta.url);
  const controller = require('s3rver/lib/controllers/object.js') as { putObject(ctx: Context): Promise<void> };
  const S3Error = require('s3rver/lib/models/error.js') as S3ErrorConstructor;
  const putObject = controller.putObject;
  /** Per bucket/key, the conditional put whose turn ends last. */
  const lastTurns = new Map<string, Promise<unknown>>();
  const currentEtag = async ({ store, params }: Context): Promise<string | undefined> => {
    try {
      await stat(store.getResourcePath(params.bucket, params.key, 'object'));
      return JSON.stringify(await readFile(store.getResourcePath(params.bucket, params.key, 'object.md5'), 'utf8'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  };
  const failed = (condition: string) => new S3Error('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', { Condition: condition });
  controller.putObject = async function putObjectIfUnchanged(ctx: Context): Promise<void> {
    const ifNoneMatch = ctx.headers['if-none-match'];
    const ifMatch = ctx.headers['if-match'];
    if (ifNoneMatch === undefined && ifMatch === undefined) return putObject(ctx);
    const name = `${ctx.params.bucket}/${ctx.params.key}`;
    const turn = (lastTurns.get(name) ?? Promise.resolve()).then(async () => {
      const etag = await currentEtag(ctx);
      if (ifNoneMatch === '*' && etag !== undefined) throw failed('If-None-Match');
      if (ifMatch !== undefined && etag === undefined) throw new S3Error('NoSuchKey', 'The specified key does not exist.', { Key: ctx.params.key });
      if (ifMatch !== undefined && ifMatch !== '*' && ifMatch !== etag) throw failed('If-Match');
      await putObject(ctx);
    });
    const settled = turn.catch(() => undefined);
    lastTurns.set(name, settled);
    try {
      await turn;
    } finally {
      if (lastTurns.get(name) === settled) lastTurns.delete(name);
    }
  };
}

/** Writes through `write` to a fresh file beside `target`, then renames it over `target`; removes it if the write fails. */
async function writeWhole(target: string, write: (partial: string) => Promise<unknown>): Promise<void> {
  const partial = `${target}.partial-${crypto.randomUUID()}`;
  try {
    await write(partial);
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}
