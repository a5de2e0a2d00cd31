// Downloads a model repository from the Hugging Face hub (or a mirror speaking its HTTP API) into a
// plain checkpoint directory: config.json, the safetensors shards and index, the tokenizer files.
//
// One listing (`GET /api/models/{repo}/revision/{rev}?blobs=true`) names the files with their sizes,
// the sha256 of LFS files and the git blob id of the others, and the commit the revision points to;
// every file is then fetched from `/{repo}/resolve/{commit}/{file}`, so a branch that moves during
// the download cannot mix two commits. Bytes stream into `{file}.partial`, which is resumed with a
// Range request when the server allows it, verified, and only then renamed to its final name.

import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Variant } from '../vocabulary/ocr-vocabulary.js';

/** The hub repository of each variant. */
export const HUB_REPOSITORIES: Record<Variant, string> = {
  v1: 'deepseek-ai/DeepSeek-OCR',
  v2: 'deepseek-ai/DeepSeek-OCR-2',
  v3: 'baidu/Unlimited-OCR',
};

export const DEFAULT_HUB_ENDPOINT = 'https://huggingface.co';

/** Top-level files a checkpoint directory needs; the Python code, images and docs are left out. */
const CHECKPOINT_FILE =
  /^(config\.json|model\.safetensors\.index\.json|tokenizer\.json|tokenizer_config\.json|special_tokens_map\.json|[^/\\]+\.safetensors)$/;

const MAX_REDIRECTS = 10;
const MAX_RETRY_DELAY_MS = 30_000;
const MAX_RETRY_AFTER_MS = 300_000;

export interface ModelDownloadOptions {
  /** "owner/name" on the hub, e.g. HUB_REPOSITORIES.v3. */
  repo: string;
  /** Created if missing; the files land directly in it (no cache layout, no symlinks). */
  dir: string;
  /** Branch, tag or commit. Default "main". */
  revision?: string;
  /** Base URL of the hub or a mirror. Default DEFAULT_HUB_ENDPOINT. */
  endpoint?: string;
  /**
   * Sent as `Authorization: Bearer` to the endpoint's origin only (not to the storage hosts its
   * redirects lead to) and never included in an error or event. Default: none.
   */
  token?: string;
  /** Failed attempts in a row (an attempt that received bytes resets the count) before giving up. Default 5. */
  maxAttempts?: number;
  /** Delay before the first retry, doubled for each further one up to 30 s; a Retry-After header wins. Default 1000. */
  retryDelayMs?: number;
  onEvent?: (event: ModelDownloadEvent) => void;
}

/** What the download is doing; `subject` is a file name or "the file listing". */
export type ModelDownloadEvent =
  | { type: 'listed'; commit: string; files: number; bytes: number }
  | { type: 'skipped'; file: string; bytes: number }
  | { type: 'started'; file: string; offset: number; size: number | undefined }
  | { type: 'progress'; file: string; bytes: number; size: number | undefined }
  | { type: 'retrying'; subject: string; reason: string; delayMs: number }
  | { type: 'downloaded'; file: string; bytes: number };

export interface ModelDownloadSummary {
  /** The commit the revision resolved to (the revision itself when the listing does not say). */
  commit: string;
  downloaded: string[];
  /** Already present with the listed size and hash. */
  skipped: string[];
  /** Bytes received by this run; resumed prefixes are not counted again. */
  bytesTransferred: number;
}

/** A failure retrying will not fix; the message says what to do. */
export class ModelDownloadError extends Error {
  override readonly name = 'ModelDownloadError';
}

/** A failure worth retrying: network errors, 5xx, 429, an unusable resume. */
class TransientError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

interface Digest {
  /** `git-sha1` is git's blob id: sha1 of "blob {size}\0" followed by the content. */
  algorithm: 'sha256' | 'git-sha1';
  hex: string;
}

interface RemoteFile {
  name: string;
  size: number | undefined;
  digest: Digest | undefined;
}

export async function downloadModel(options: ModelDownloadOptions): Promise<ModelDownloadSummary> {
  const download = new RepositoryDownload(options);
  const { commit, files } = await download.list();
  await mkdir(options.dir, { recursive: true });
  const summary: ModelDownloadSummary = { commit, downloaded: [], skipped: [], bytesTransferred: 0 };
  for (const file of files) {
    if (await matchesListing(join(options.dir, file.name), file)) {
      summary.skipped.push(file.name);
      options.onEvent?.({ type: 'skipped', file: file.name, bytes: file.size ?? 0 });
    } else {
      summary.bytesTransferred += await download.fetchFile(file, commit);
      summary.downloaded.push(file.name);
    }
  }
  return summary;
}

class RepositoryDownload {
  private readonly endpoint: string;
  private readonly origin: string;
  private readonly revision: string;

  constructor(private readonly options: ModelDownloadOptions) {
    this.endpoint = (options.endpoint ?? DEFAULT_HUB_ENDPOINT).replace(/\/+$/, '');
    if (!URL.canParse(this.endpoint)) throw new ModelDownloadError(`the hub endpoint "${this.endpoint}" is not a URL`);
    this.origin = new URL(this.endpoint).origin;
    this.revision = options.revision ?? 'main';
    // Checked here because fetch would reject it with an error message that quotes the header.
    if (options.token !== undefined && !/^[\x21-\x7e]+$/.test(options.token)) {
      throw new ModelDownloadError('HF_TOKEN holds spaces, line breaks or non-ASCII characters: set it to the token alone');
    }
  }

  async list(): Promise<{ commit: string; files: RemoteFile[] }> {
    const { repo } = this.options;
    const url = `${this.endpoint}/api/models/${repo}/revision/${encodeURIComponent(this.revision)}?blobs=true`;
    const listing = await this.withRetries('the file listing', async () => {
      const response = await this.get(url, {});
      if (!response.ok) throw this.statusError(response, undefined);
      try {
        return (await response.json()) as unknown;
      } catch (error) {
        throw new TransientError(`the listing was cut off or is not JSON (${describe(error)})`);
      }
    });
    const { commit, files } = parseListing(listing, `${this.endpoint} for ${repo}`);
    const needed = files.filter((file) => CHECKPOINT_FILE.test(file.name));
    if (!needed.some((file) => file.name === 'config.json') || !needed.some((file) => file.name.endsWith('.safetensors'))) {
      throw new ModelDownloadError(
        `${repo}@${this.revision} has no config.json or no .safetensors file at its top level: it is not a checkpoint this command can download`,
      );
    }
    const resolved = commit ?? this.revision;
    const bytes = needed.reduce((sum, file) => sum + (file.size ?? 0), 0);
    this.options.onEvent?.({ type: 'listed', commit: resolved, files: needed.length, bytes });
    return { commit: resolved, files: needed };
  }

  /** Downloads, verifies and renames one file; returns the bytes received. */
  async fetchFile(file: RemoteFile, commit: string): Promise<number> {
    const target = join(this.options.dir, file.name);
    const partial = `${target}.partial`;
    let received = 0;
    // A partial left by an earlier run may hold another commit's bytes: after a resumed download that
    // fails verification, start over once from byte 0.
    for (let restarted = false; ; restarted = true) {
      const { bytes, resumed } = await this.fetchToPartial(file, commit, partial);
      received += bytes;
      const problem = await mismatch(partial, file);
      if (problem === undefined) break;
      await rm(partial, { force: true });
      if (!resumed || restarted) {
        throw new ModelDownloadError(
          `${file.name} from ${this.options.repo}@${commit} is damaged: ${problem}. It was deleted; run the command ` +
            `again, and if it fails the same way something between here and ${new URL(this.endpoint).host} alters the download`,
        );
      }
    }
    await rename(partial, target);
    this.options.onEvent?.({ type: 'downloaded', file: file.name, bytes: file.size ?? received });
    return received;
  }

  private async fetchToPartial(file: RemoteFile, commit: string, partial: string): Promise<{ bytes: number; resumed: boolean }> {
    const url = `${this.endpoint}/${this.options.repo}/resolve/${encodeURIComponent(commit)}/${encodeURIComponent(file.name)}`;
    let bytes = 0;
    let resumed = false;
    await this.withRetries(file.name, async (attempt) => {
      let offset = await fileSize(partial);
      if (file.size !== undefined && offset > file.size) {
        await rm(partial, { force: true });
        offset = 0;
      }
      if (offset > 0 && offset === file.size) {
        resumed = true; // complete already: an earlier run stopped before verifying it
        return;
      }
      const response = await this.get(url, offset > 0 ? { range: `bytes=${offset}-` } : {});
      let append = false;
      if (offset > 0 && response.status === 206) {
        if (contentRangeStart(response) !== offset) {
          await discardBody(response);
          await rm(partial, { force: true });
          throw new TransientError(`the server resumed ${file.name} at another offset than ${offset}`);
        }
        append = true;
        resumed = true;
      } else if (offset > 0 && response.status === 416) {
        await discardBody(response);
        await rm(partial, { force: true });
        throw new TransientError(`the server refused to resume ${file.name} at byte ${offset}`);
      } else if (response.status !== 200) {
        throw this.statusError(response, file.name);
      }
      const start = append ? offset : 0;
      this.options.onEvent?.({ type: 'started', file: file.name, offset: start, size: file.size });
      let written = start;
      await pipeline(
        networkChunks(response, file.name, (chunk) => {
          bytes += chunk.length;
          written += chunk.length;
          attempt.receivedBytes = true;
          this.options.onEvent?.({ type: 'progress', file: file.name, bytes: written, size: file.size });
        }),
        createWriteStream(partial, { flags: append ? 'a' : 'w' }),
      );
    });
    return { bytes, resumed };
  }

  /** GET following redirects itself, so that the token goes to the hub's origin only. */
  private async get(url: string, headers: Record<string, string>): Promise<Response> {
    let current = new URL(url);
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const authorization: Record<string, string> =
        this.options.token && current.origin === this.origin ? { authorization: `Bearer ${this.options.token}` } : {};
      let response: Response;
      try {
        response = await fetch(current, {
          headers: { ...headers, ...authorization, 'accept-encoding': 'identity' },
          redirect: 'manual',
        });
      } catch (error) {
        throw new TransientError(`cannot reach ${current.host}: ${describe(error)}`);
      }
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || location === null) return response;
      await discardBody(response);
      current = new URL(location, current);
    }
    throw new ModelDownloadError(`more than ${MAX_REDIRECTS} redirects from ${url}: check --endpoint / HF_ENDPOINT`);
  }

  private async withRetries<T>(subject: string, run: (attempt: { receivedBytes: boolean }) => Promise<T>): Promise<T> {
    const maxAttempts = this.options.maxAttempts ?? 5;
    const firstDelayMs = this.options.retryDelayMs ?? 1000;
    let failures = 0;
    for (;;) {
      const attempt = { receivedBytes: false };
      try {
        return await run(attempt);
      } catch (error) {
        if (!(error instanceof TransientError)) throw error;
        failures = attempt.receivedBytes ? 1 : failures + 1;
        if (failures >= maxAttempts) {
          throw new ModelDownloadError(
            `${subject} of ${this.options.repo}: gave up after ${failures} failed attempts in a row (last: ${error.message}); ` +
              `run the command again later: finished files are kept and a partial file is resumed`,
          );
        }
        const delayMs = error.retryAfterMs ?? Math.min(firstDelayMs * 2 ** (failures - 1), MAX_RETRY_DELAY_MS);
        this.options.onEvent?.({ type: 'retrying', subject, reason: error.message, delayMs });
        await sleep(delayMs);
      }
    }
  }

  /** The error for a non-success status: transient for 5xx/429/408, else one that says what to do. */
  private statusError(response: Response, file: string | undefined): Error {
    void discardBody(response);
    const { status } = response;
    if (status >= 500 || status === 429 || status === 408) return new TransientError(`HTTP ${status}`, retryAfterMs(response));
    const { repo } = this.options;
    const code = response.headers.get('x-error-code');
    const detail = response.headers.get('x-error-message');
    const because = detail ? `: ${detail}` : '';
    const hasToken = Boolean(this.options.token);
    if (code === 'RevisionNotFound') {
      return new ModelDownloadError(`revision "${this.revision}" not found in ${repo} (HTTP ${status}): pass an existing branch, tag or commit with --revision`);
    }
    if (code === 'GatedRepo') {
      return new ModelDownloadError(
        `${repo} is gated (HTTP ${status}): accept its conditions at ${this.endpoint}/${repo} while logged in, then set HF_TOKEN to a read token of that account`,
      );
    }
    if (status === 401 && hasToken) {
      return new ModelDownloadError(`${this.endpoint} refused HF_TOKEN (HTTP 401${because}): set HF_TOKEN to a valid read token (${this.endpoint}/settings/tokens)`);
    }
    if (file !== undefined && (status === 404 || code === 'EntryNotFound')) {
      return new ModelDownloadError(`${file} is listed in ${repo} but ${this.endpoint} answered HTTP ${status} for it: run the command again later`);
    }
    if (status === 401 || status === 404 || code === 'RepoNotFound') {
      const access = hasToken ? 'or HF_TOKEN cannot read it' : 'or it is private or gated: then set HF_TOKEN to a read token';
      return new ModelDownloadError(`repository ${repo} not found at ${this.endpoint} (HTTP ${status}), ${access}`);
    }
    if (status === 403) {
      const fix = hasToken ? 'HF_TOKEN lacks read access to it' : 'set HF_TOKEN to a read token with access to it';
      return new ModelDownloadError(`${this.endpoint} refused access to ${repo} (HTTP 403${because}): ${fix}`);
    }
    return new ModelDownloadError(`unexpected HTTP ${status}${because} from ${this.endpoint} for ${file ?? `the listing of ${repo}`}`);
  }
}

/** Releases the connection of an answer whose body is not needed; a failure to do so changes nothing. */
async function discardBody(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => undefined);
}

/** The body's chunks; a connection lost mid-body becomes a TransientError. */
async function* networkChunks(response: Response, file: string, onChunk: (chunk: Uint8Array) => void): AsyncGenerator<Uint8Array> {
  if (response.body === null) return;
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      onChunk(chunk);
      yield chunk;
    }
  } catch (error) {
    throw new TransientError(`connection lost while receiving ${file}: ${describe(error)}`);
  }
}

function parseListing(body: unknown, source: string): { commit: string | undefined; files: RemoteFile[] } {
  const listing = body as { sha?: unknown; siblings?: unknown } | null;
  if (typeof listing !== 'object' || listing === null || !Array.isArray(listing.siblings)) {
    throw new ModelDownloadError(`the answer of ${source} has no "siblings" list: is --endpoint / HF_ENDPOINT a Hugging Face hub?`);
  }
  const files = listing.siblings.map((entry: unknown): RemoteFile => {
    const sibling = entry as { rfilename?: unknown; size?: unknown; blobId?: unknown; lfs?: { sha256?: unknown; size?: unknown } };
    if (typeof sibling?.rfilename !== 'string') throw new ModelDownloadError(`a file in the answer of ${source} has no "rfilename"`);
    const lfs = sibling.lfs;
    if (lfs && typeof lfs.sha256 === 'string') {
      const size = typeof lfs.size === 'number' ? lfs.size : undefined;
      return { name: sibling.rfilename, size, digest: { algorithm: 'sha256', hex: lfs.sha256.toLowerCase() } };
    }
    const size = typeof sibling.size === 'number' ? sibling.size : undefined;
    const digest: Digest | undefined = typeof sibling.blobId === 'string' ? { algorithm: 'git-sha1', hex: sibling.blobId.toLowerCase() } : undefined;
    return { name: sibling.rfilename, size, digest };
  });
  return { commit: typeof listing.sha === 'string' ? listing.sha : undefined, files };
}

/** Whether a file on disk is the listed one: same size and same hash (no hash listed: never). */
async function matchesListing(path: string, file: RemoteFile): Promise<boolean> {
  if (file.digest === undefined || !(await fileExists(path))) return false;
  return (await mismatch(path, file)) === undefined;
}

/** Why a file on disk differs from the listing, or undefined when it matches as far as listed. */
async function mismatch(path: string, file: RemoteFile): Promise<string | undefined> {
  const size = await fileSize(path);
  if (file.size !== undefined && size !== file.size) return `${size} bytes instead of the listed ${file.size}`;
  if (file.digest === undefined) return undefined;
  const actual = await hashFile(path, file.digest.algorithm, size);
  if (actual !== file.digest.hex) return `its ${file.digest.algorithm} is ${actual}, the hub lists ${file.digest.hex}`;
  return undefined;
}

async function hashFile(path: string, algorithm: Digest['algorithm'], size: number): Promise<string> {
  const hash = createHash(algorithm === 'sha256' ? 'sha256' : 'sha1');
  if (algorithm === 'git-sha1') hash.update(`blob ${size}\0`);
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function fileSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
}

async function fileExists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** The first byte of a 206 answer, from `Content-Range: bytes START-END/TOTAL`. */
function contentRangeStart(response: Response): number | undefined {
  const match = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(response.headers.get('content-range') ?? '');
  return match ? Number(match[1]) : undefined;
}

/** Retry-After in seconds (the form the hub and CDNs send), capped at 5 minutes. */
function retryAfterMs(response: Response): number | undefined {
  const header = response.headers.get('retry-after');
  const seconds = header === null ? NaN : Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds * 1000, MAX_RETRY_AFTER_MS) : undefined;
}

/** One line for an error from fetch, which hides the reason (ECONNRESET, ...) in its cause. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as (Error & { code?: string }) | undefined;
  const reason = cause instanceof Error ? cause.code ?? (cause.message || cause.name) : undefined;
  return reason === undefined ? error.message : `${error.message} (${reason})`;
}
