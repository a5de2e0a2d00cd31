// Settings of the s3:// backend: an options object with documented defaults, completed from the
// environment the way AWS tools read it. Credentials are not settings: the SDK's default chain
// finds them (environment, shared config and SSO profiles, web identity, container or instance role).
import { StorageError } from './storage-error.js';

/** When the SDK computes request checksums or validates response checksums. */
export type ChecksumSetting = 'WHEN_REQUIRED' | 'WHEN_SUPPORTED';

/** The SDK's retry strategies: 'standard' (exponential backoff with jitter) or 'adaptive' (adds client-side rate limiting). */
export type RetryMode = 'standard' | 'adaptive';

export interface S3StorageOptions {
  /**
   * URL of an S3-compatible server, e.g. http://127.0.0.1:9000 for MinIO.
   * Default: S3_ENDPOINT, else AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else AWS S3 itself.
   */
  endpoint?: string;
  /** Default: AWS_REGION, else 'us-east-1'. */
  region?: string;
  /**
   * Address buckets as http://host/bucket/key instead of http://bucket.host/key.
   * Default: S3_FORCE_PATH_STYLE ('true' or 'false'), else true when an endpoint is set, false for AWS S3.
   */
  forcePathStyle?: boolean;
  /**
   * Default: AWS_REQUEST_CHECKSUM_CALCULATION, else 'WHEN_REQUIRED' when an endpoint is set (servers
   * that do not understand the SDK's aws-chunked checksum framing store streamed uploads corrupted),
   * else the SDK's default ('WHEN_SUPPORTED').
   */
  requestChecksumCalculation?: ChecksumSetting;
  /** Default: AWS_RESPONSE_CHECKSUM_VALIDATION, else 'WHEN_REQUIRED' when an endpoint is set, else the SDK's default. */
  responseChecksumValidation?: ChecksumSetting;
  /** Attempts per request, the first included. Default: the SDK's (AWS_MAX_ATTEMPTS, else 3). */
  maxAttempts?: number;
  /** Default: the SDK's (AWS_RETRY_MODE, else 'standard'). */
  retryMode?: RetryMode;
  /** Part size of multipart uploads in bytes, at least 5 MiB. Default 8 MiB. */
  partSizeBytes?: number;
  /** Parts of one put uploaded at the same time; memory use is up to partSizeBytes × this. Default 4. */
  uploadQueueSize?: number;
  /** Give up on connecting after this long, then retry; 0 waits forever. Default 5000 ms. */
  connectionTimeoutMs?: number;
  /** Give up on a connection idle for this long (no bytes either way), then retry; 0 waits forever. Default 120000 ms. */
  socketTimeoutMs?: number;
}

/** S3StorageOptions with every default applied; undefined leaves the setting to the SDK. */
export interface S3Config {
  endpoint: string | undefined;
  region: string;
  forcePathStyle: boolean;
  requestChecksumCalculation: ChecksumSetting | undefined;
  responseChecksumValidation: ChecksumSetting | undefined;
  maxAttempts: number | undefined;
  retryMode: RetryMode | undefined;
  partSizeBytes: number;
  uploadQueueSize: number;
  connectionTimeoutMs: number;
  socketTimeoutMs: number;
}

const MIB = 1024 * 1024;
const ENDPOINT_VARIABLES = ['S3_ENDPOINT', 'AWS_ENDPOINT_URL_S3', 'AWS_ENDPOINT_URL'] as const;

export function resolveS3Config(options: S3StorageOptions = {}, env: NodeJS.ProcessEnv = process.env): S3Config {
  const endpoint = resolveEndpoint(options.endpoint, env);
  const custom = endpoint !== undefined;
  return {
    endpoint,
    region: options.region ?? nonEmpty(env.AWS_REGION) ?? 'us-east-1',
    forcePathStyle: options.forcePathStyle ?? parseBoolean(env.S3_FORCE_PATH_STYLE, 'S3_FORCE_PATH_STYLE') ?? custom,
    requestChecksumCalculation:
      options.requestChecksumCalculation ??
      parseChecksumSetting(env.AWS_REQUEST_CHECKSUM_CALCULATION, 'AWS_REQUEST_CHECKSUM_CALCULATION') ??
      (custom ? 'WHEN_REQUIRED' : undefined),
    responseChecksumValidation:
      options.responseChecksumValidation ??
      parseChecksumSetting(env.AWS_RESPONSE_CHECKSUM_VALIDATION, 'AWS_RESPONSE_CHECKSUM_VALIDATION') ??
      (custom ? 'WHEN_REQUIRED' : undefined),
    maxAttempts: options.maxAttempts === undefined ? undefined : integerAtLeast(options.maxAttempts, 1, 'maxAttempts'),
    retryMode: options.retryMode,
    partSizeBytes: integerAtLeast(options.partSizeBytes ?? 8 * MIB, 5 * MIB, 'partSizeBytes'),
    uploadQueueSize: integerAtLeast(options.uploadQueueSize ?? 4, 1, 'uploadQueueSize'),
    connectionTimeoutMs: integerAtLeast(options.connectionTimeoutMs ?? 5000, 0, 'connectionTimeoutMs'),
    socketTimeoutMs: integerAtLeast(options.socketTimeoutMs ?? 120_000, 0, 'socketTimeoutMs'),
  };
}

/** The endpoint as it may appear in messages and logs: scheme, host, port and path only. */
export function describeEndpoint(config: Pick<S3Config, 'endpoint' | 'region'>): string {
  if (config.endpoint === undefined) return `AWS S3 (region ${config.region})`;
  const url = new URL(config.endpoint);
  return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
}

function resolveEndpoint(option: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const variable = ENDPOINT_VARIABLES.find((name) => nonEmpty(env[name]) !== undefined);
  const endpoint = option ?? (variable === undefined ? undefined : nonEmpty(env[variable]));
  if (endpoint === undefined) return undefined;
  const source = option !== undefined ? 'the endpoint option' : variable;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw configError(`the S3 endpoint from ${source} is not a URL; set it like http://127.0.0.1:9000`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw configError(`the S3 endpoint from ${source} must be an http:// or https:// URL, not ${url.protocol}`);
  }
  if (url.username !== '' || url.password !== '') {
    throw configError(
      `the S3 endpoint from ${source} carries a user name or password; remove them and provide credentials through the AWS chain (e.g. AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)`,
    );
  }
  return endpoint;
}

function parseBoolean(value: string | undefined, variable: string): boolean | undefined {
  const normalized = nonEmpty(value)?.toLowerCase();
  if (normalized === undefined) return undefined;
  if (normalized === 'true' || normalized === '1') return true;
  if (normalized === 'false' || normalized === '0') return false;
  throw configError(`${variable} must be 'true' or 'false', not '${value}'`);
}

function parseChecksumSetting(value: string | undefined, variable: string): ChecksumSetting | undefined {
  const normalized = nonEmpty(value)?.toUpperCase();
  if (normalized === undefined) return undefined;
  if (normalized === 'WHEN_REQUIRED' || normalized === 'WHEN_SUPPORTED') return normalized;
  throw configError(`${variable} must be WHEN_REQUIRED or WHEN_SUPPORTED, not '${value}'`);
}

function integerAtLeast(value: number, minimum: number, name: keyof S3StorageOptions): number {
  if (!Number.isInteger(value) || value < minimum) {
    throw configError(`S3 storage option ${name} must be an integer of at least ${minimum}, not ${value}`);
  }
  return value;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function configError(message: string): StorageError {
  return new StorageError('permanent', message);
}
