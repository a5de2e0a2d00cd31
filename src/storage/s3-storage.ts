// s3:// backend on the AWS SDK v3: objects under s3://bucket/prefix. Puts go through lib-storage's
// Upload (one PutObject for small bodies, parallel multipart parts for large streams); every request
// is retried by the SDK with exponential backoff and jitter; final errors become StorageErrors.
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  paginateListObjectsV2,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { PassThrough, type Readable } from 'node:stream';

import { describeEndpoint, resolveS3Config, type S3Config, type S3StorageOptions } from './s3-config.js';
import { isConditionalWriteRefusal, s3StorageError } from './s3-errors.js';
import { parseS3Url } from './s3-url.js';
import type { ListOptions, PutOptions, Storage, StoredObject, VersionedObject } from './storage.js';
import { existsBy, StorageError } from './storage-error.js';
import { checkKey, checkPrefix } from './storage-key.js';

export class S3Storage implements Storage {
  /** s3://bucket or s3://bucket/prefix, without a trailing '/'. */
  readonly url: string;
  readonly bucket: string;
  /** Prepended to every key: '' or a path ending in '/'. */
  readonly prefix: string;
  readonly config: S3Config;
  private readonly client: S3Client;
  private readonly endpoint: string;

  constructor(url: string, options: S3StorageOptions = {}) {
    const { bucket, path } = parseS3Url(url);
    const prefix = path.replace(/\/$/, '');
    if (prefix !== '') checkKey(prefix);
    this.bucket = bucket;
    this.prefix = prefix === '' ? '' : `${prefix}/`;
    this.url = `s3://${bucket}${prefix === '' ? '' : `/${prefix}`}`;
    this.config = resolveS3Config(options);
    this.endpoint = describeEndpoint(this.config);
    const config = this.config;
    this.client = new S3Client({
      region: config.region,
      endpoint: config.endpoint,
      forcePathStyle: config.forcePathStyle,
      requestChecksumCalculation: config.requestChecksumCalculation,
      responseChecksumValidation: config.responseChecksumValidation,
      maxAttempts: config.maxAttempts,
      retryMode: config.retryMode,
      requestHandler: { connectionTimeout: config.connectionTimeoutMs, socketTimeout: config.socketTimeoutMs },
    });
  }

  async put(key: string, body: Buffer | Readable, options: PutOptions = {}): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: this.objectKey(key), Body: body, ContentType: options.contentType },
      partSize: this.config.partSizeBytes,
      queueSize: this.config.uploadQueueSize,
    });
    try {
      await upload.done();
    } catch (error) {
      throw this.error(error, 'put', key);
    }
  }

  /** One PutObject with If-None-Match: * (expected null) or If-Match: the ETag read. */
  async putIfUnchanged(key: string, body: Buffer, expected: string | null, options: PutOptions = {}): Promise<void> {
    const condition = expected === null ? { IfNoneMatch: '*' } : { IfMatch: expected };
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key), Body: body, ContentType: options.contentType, ...condition }));
    } catch (error) {
      if (!isConditionalWriteRefusal(error, expected !== null)) throw this.error(error, 'put', key);
      const found = expected === null ? 'an object is there now' : `it is no longer the object ${expected}`;
      throw new StorageError('conflict', `put ${JSON.stringify(key)} in ${this.url}: ${found}; read it again before writing`, { key, cause: error });
    }
  }

  async get(key: string): Promise<Buffer> {
    return (await this.getWhole(key, 'get')).body;
  }

  async getVersioned(key: string): Promise<VersionedObject> {
    const { body, etag } = await this.getWhole(key, 'getVersioned');
    if (etag === undefined) {
      throw new StorageError('permanent', `${this.endpoint} answered GetObject ${JSON.stringify(key)} in ${this.url} without an ETag; check the server`, { key });
    }
    return { body, version: etag };
  }

  /** The stream fails with a StorageError (usually 'transient') if the connection breaks mid-object. */
  async getStream(key: string): Promise<Readable> {
    let body: Readable;
    try {
      // On Node the SDK's body is an http.IncomingMessage with helper methods mixed in.
      body = (await this.getObject(key)).Body as Readable;
    } catch (error) {
      throw this.error(error, 'getStream', key);
    }
    const out = new PassThrough();
    body.on('error', (error) => out.destroy(this.error(error, 'getStream', key)));
    out.on('close', () => body.destroy()); // a reader that stops early releases the connection
    return body.pipe(out);
  }

  exists(key: string): Promise<boolean> {
    return existsBy(() => this.head(key, 'exists'));
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
    } catch (error) {
      throw this.error(error, 'delete', key);
    }
  }

  /** Pages through ListObjectsV2 (1000 keys a page). Keys ending in '/' (console "folders") are skipped. */
  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<StoredObject> {
    const pages = paginateListObjectsV2(
      { client: this.client },
      { Bucket: this.bucket, Prefix: this.prefix + checkPrefix(prefix), Delimiter: options.recursive ? undefined : '/' },
    );
    try {
      for await (const page of pages) {
        for (const object of page.Contents ?? []) {
          if (object.Key === undefined || object.Key.endsWith('/')) continue;
          yield {
            key: object.Key.slice(this.prefix.length),
            size: object.Size ?? 0,
            etag: object.ETag,
            lastModified: object.LastModified,
          };
        }
      }
    } catch (error) {
      throw this.error(error, 'list', prefix);
    }
  }

  stat(key: string): Promise<StoredObject> {
    return this.head(key, 'stat');
  }

  /** Closes the client's pooled connections; the storage must not be used afterwards. */
  destroy(): void {
    this.client.destroy();
  }

  private async head(key: string, operation: string): Promise<StoredObject> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
      return { key, size: head.ContentLength ?? 0, etag: head.ETag, lastModified: head.LastModified };
    } catch (error) {
      throw this.error(error, operation, key);
    }
  }

  private async getWhole(key: string, operation: string): Promise<{ body: Buffer; etag?: string }> {
    try {
      const { Body, ETag } = await this.getObject(key);
      const bytes = await Body.transformToByteArray();
      return { body: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), etag: ETag };
    } catch (error) {
      throw this.error(error, operation, key);
    }
  }

  private async getObject(key: string) {
    const output = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
    const { Body } = output;
    if (Body === undefined) {
      throw new StorageError('permanent', `${this.endpoint} answered GetObject ${JSON.stringify(key)} in ${this.url} without a body; check the server`);
    }
    return { ...output, Body };
  }

  private objectKey(key: string): string {
    return this.prefix + checkKey(key);
  }

  private error(error: unknown, operation: string, key: string): StorageError {
    return s3StorageError(error, { operation, key, url: this.url, bucket: this.bucket, endpoint: this.endpoint });
  }
}
