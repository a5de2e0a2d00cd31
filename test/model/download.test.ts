// `scriptorium model download` against a local emulation of the Hugging Face hub: the listing API
// with sizes, sha256 (LFS) and git blob ids, `resolve` answering small files itself and redirecting
// LFS files to a storage server on another origin (as huggingface.co does to its CDN), Range support
// that can be turned off, and injected failures (a 503, a connection dropped mid-body).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';

import { downloadModel, HUB_REPOSITORIES, ModelDownloadError, type ModelDownloadEvent } from '../../src/model/model-download.js';

const REPO = HUB_REPOSITORIES.v3;
const COMMIT = '5d2f6a9c0b1e4f7a8c3d2e1f0a9b8c7d6e5f4a3b';
const SHARD = 'model-00001-of-000001.safetensors';
const MAIN = new URL('../../src/cli/main.js', import.meta.url).pathname;

/** Deterministic bytes, so a failure reproduces. */
function bytes(seed: string, length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let offset = 0, i = 0; offset < length; offset += 32, i++) createHash('sha256').update(`${seed}:${i}`).digest().copy(out, offset);
  return out;
}

const REPO_FILES: Record<string, Buffer> = {
  'config.json': Buffer.from('{"architectures":["DeepseekOCRForCausalLM"],"model_type":"deepseek_vl_v2"}'),
  'model.safetensors.index.json': Buffer.from(`{"metadata":{},"weight_map":{"lm_head.weight":"${SHARD}"}}`),
  [SHARD]: bytes('shard', 300_000),
  'tokenizer.json': Buffer.from('{"version":"1.0","model":{"type":"BPE"}}'),
  'tokenizer_config.json': Buffer.from('{"bos_token":"<｜begin▁of▁sentence｜>"}'),
  'special_tokens_map.json': Buffer.from('{}'),
  'modeling_deepseekocr.py': Buffer.from('import torch\n'),
  'README.md': Buffer.from('# Unlimited-OCR\n'),
  'assets/fig1.png': bytes('png', 1000),
};
const CHECKPOINT_FILES = ['config.json', SHARD, 'model.safetensors.index.json', 'special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json'];
const isLfs = (name: string) => name.endsWith('.safetensors') || name.endsWith('.png');
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

interface SeenRequest {
  server: 'hub' | 'storage';
  path: string;
  authorization: string | undefined;
  range: string | undefined;
}

class FakeHub {
  rangeSupport = true;
  /** Consumed by the next storage (LFS blob) answers, one per answer. */
  injectedFailures: Array<'503' | 'drop-mid-body'> = [];
  /** Files served with one byte changed. */
  corrupted = new Set<string>();
  /** When set, the hub answers 401 to requests without `Authorization: Bearer {requiredToken}`. */
  requiredToken: string | undefined;
  requests: SeenRequest[] = [];
  private readonly hub = http.createServer((req, res) => this.answerHub(req, res));
  private readonly storage = http.createServer((req, res) => this.answerStorage(req, res));

  get endpoint(): string {
    return `http://127.0.0.1:${(this.hub.address() as AddressInfo).port}`;
  }

  async start(): Promise<void> {
    await Promise.all([this.hub, this.storage].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
  }

  async close(): Promise<void> {
    for (const server of [this.hub, this.storage]) server.closeAllConnections();
    await Promise.all([this.hub, this.storage].map((server) => new Promise((resolve) => server.close(resolve))));
  }

  private record(server: SeenRequest['server'], req: http.IncomingMessage): void {
    this.requests.push({ server, path: req.url ?? '', authorization: req.headers.authorization, range: req.headers.range });
  }

  private answerHub(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.record('hub', req);
    if (this.requiredToken !== undefined && req.headers.authorization !== `Bearer ${this.requiredToken}`) {
      res.writeHead(401, { 'x-error-message': 'Invalid credentials in Authorization header' }).end();
      return;
    }
    const url = new URL(req.url ?? '/', this.endpoint);
    const listing = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/([^/]+)$/.exec(url.pathname);
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    const [repo, revision] = (listing ?? resolve ?? []).slice(1, 3).map(decodeURIComponent);
    if (repo !== REPO) {
      // Like huggingface.co: 401 without a token, so that private repositories do not reveal themselves.
      res.writeHead(req.headers.authorization ? 404 : 401, { 'x-error-code': 'RepoNotFound' }).end();
    } else if (revision !== 'main' && revision !== COMMIT) {
      res.writeHead(404, { 'x-error-code': 'RevisionNotFound' }).end();
    } else if (listing) {
      assert.equal(url.searchParams.get('blobs'), 'true', 'sizes and hashes are only listed with ?blobs=true');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(this.listing()));
    } else {
      const name = decodeURIComponent(resolve![3]!);
      const content = REPO_FILES[name];
      if (content === undefined) res.writeHead(404, { 'x-error-code': 'EntryNotFound' }).end();
      else if (isLfs(name)) res.writeHead(302, { location: `http://127.0.0.1:${(this.storage.address() as AddressInfo).port}/blobs/${sha256(content)}` }).end();
      else this.serve(req, res, name, content);
    }
  }

  private answerStorage(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.record('storage', req);
    const name = Object.keys(REPO_FILES).find((file) => `/blobs/${sha256(REPO_FILES[file]!)}` === req.url);
    if (name === undefined) {
      res.writeHead(404).end();
      return;
    }
    const failure = this.injectedFailures.shift();
    if (failure === '503') {
      res.writeHead(503, { 'retry-after': '0' }).end();
    } else if (failure === 'drop-mid-body') {
      const content = REPO_FILES[name]!;
      res.writeHead(200, { 'content-length': content.length });
      res.write(content.subarray(0, content.length >> 1), () => res.destroy());
    } else {
      this.serve(req, res, name, REPO_FILES[name]!);
    }
  }

  private serve(req: http.IncomingMessage, res: http.ServerResponse, name: string, content: Buffer): void {
    const body = Buffer.from(content);
    if (this.corrupted.has(name)) body[body.length >> 1] ^= 0xff;
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (range && this.rangeSupport) {
      const start = Number(range[1]);
      if (start >= body.length) {
        res.writeHead(416, { 'content-range': `bytes */${body.length}` }).end();
        return;
      }
      res.writeHead(206, { 'content-length': body.length - start, 'content-range': `bytes ${start}-${body.length - 1}/${body.length}` });
      res.end(body.subarray(start));
      return;
    }
    res.writeHead(200, { 'content-length': body.length }).end(body);
  }

  /** The shape of huggingface.co's `/api/models/{repo}/revision/{rev}?blobs=true`. */
  private listing(): object {
    const siblings = Object.entries(REPO_FILES).map(([rfilename, content]) => {
      if (!isLfs(rfilename)) {
        const blobId = createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
        return { rfilename, size: content.length, blobId };
      }
      const pointer = `version https://git-lfs.github.com/spec/v1\noid sha256:${sha256(content)}\nsize ${content.length}\n`;
      const blobId = createHash('sha1').update(`blob ${pointer.length}\0${pointer}`).digest('hex');
      return { rfilename, size: content.length, blobId, lfs: { sha256: sha256(content), size: content.length, pointerSize: pointer.length } };
    });
    return { _id: '68f0c1', id: REPO, modelId: REPO, sha: COMMIT, private: false, gated: false, siblings };
  }
}

async function startHub(t: TestContext): Promise<FakeHub> {
  const hub = new FakeHub();
  await hub.start();
  t.after(() => hub.close());
  return hub;
}

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'scriptorium-download-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function download(hub: FakeHub, dir: string, events: ModelDownloadEvent[] = []) {
  return downloadModel({ repo: REPO, dir, endpoint: hub.endpoint, retryDelayMs: 1, onEvent: (event) => events.push(event) });
}

async function assertCheckpoint(dir: string): Promise<void> {
  assert.deepEqual((await readdir(dir)).sort(), [...CHECKPOINT_FILES].sort());
  for (const name of CHECKPOINT_FILES) assert.ok((await readFile(join(dir, name))).equals(REPO_FILES[name]!), `${name} has the hub's bytes`);
}

async function runCli(args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { env: { ...process.env, HF_TOKEN: '', HF_ENDPOINT: '', ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code) : 0, output: `${stdout}${stderr}` });
    });
  });
}

test('downloads the checkpoint files of a repository at the listed commit and leaves out code, images and docs', async (t) => {
  const hub = await startHub(t);
  const dir = await tempDir(t);
  const summary = await download(hub, dir);
  await assertCheckpoint(dir);
  assert.equal(summary.commit, COMMIT);
  assert.deepEqual([...summary.downloaded].sort(), [...CHECKPOINT_FILES].sort());
  const resolved = hub.requests.filter((request) => request.path.includes('/resolve/'));
  assert.ok(resolved.every((request) => request.path.startsWith(`/${REPO}/resolve/${COMMIT}/`)), 'files come from the listed commit, not from "main"');
});

test('the LFS shard is fetched through the redirect to the storage server and checked against its sha256', async (t) => {
  const hub = await startHub(t);
  const dir = await tempDir(t);
  await download(hub, dir);
  assert.deepEqual(
    hub.requests.filter((request) => request.server === 'storage').map((request) => request.path),
    [`/blobs/${sha256(REPO_FILES[SHARD]!)}`],
  );
});

test('a partial download is resumed with a Range request from its current size', async (t) => {
  const hub = await startHub(t);
  const dir = await tempDir(t);
  await writeFile(join(dir, `${SHARD}.partial`), REPO_FILES[SHARD]!.subarray(0, 100_000));
  const summary = await download(hub, dir);
  await assertCheckpoint(dir);
  assert.deepEqual(hub.requests.filter((request) => request.server === 'storage').map((request) => request.range), ['bytes=100000-']);
  const otherFiles = CHECKPOINT_FILES.filter((name) => name !== SHARD).reduce((sum, name) => sum + REPO_FILES[name]!.length, 0);
  assert.equal(summary.bytesTransferred, otherFiles + 200_000);
});

test('a partial download restarts from the first byte when the server ignores Range', async (t) => {
  const hub = await startHub(t);
  hub.rangeSupport = false;
  const dir = await tempDir(t);
  await writeFile(join(dir, `${SHARD}.partial`), REPO_FILES[SHARD]!.subarray(0, 100_000));
  await download(hub, dir);
  await assertCheckpoint(dir);
});

test('a partial left by another revision fails verification after resuming and is downloaded again from scratch', async (t) => {
  const hub = await startHub(t);
  const dir = await tempDir(t);
  await writeFile(join(dir, `${SHARD}.partial`), bytes('older revision', 100_000));
  await download(hub, dir);
  await assertCheckpoint(dir);
  assert.deepEqual(hub.requests.filter((request) => request.server === 'storage').map((request) => request.range), ['bytes=100000-', undefined]);
});

test('a 503 and a connection dropped mid-body are retried, the second one resumed where the bytes stopped', async (t) => {
  const hub = await startHub(t);
  hub.injectedFailures = ['503', 'drop-mid-body'];
  const dir = await tempDir(t);
  const events: ModelDownloadEvent[] = [];
  await download(hub, dir, events);
  await assertCheckpoint(dir);
  const retries = events.filter((event) => event.type === 'retrying');
  assert.equal(retries.length, 2);
  assert.match(retries[0]!.type === 'retrying' ? retries[0]!.reason : '', /HTTP 503/);
  assert.match(retries[1]!.type === 'retrying' ? retries[1]!.reason : '', new RegExp(`connection lost while receiving ${SHARD}`));
  const ranges = hub.requests.filter((request) => request.server === 'storage').map((request) => request.range);
  assert.equal(ranges.length, 3);
  assert.match(ranges[2] ?? '', /^bytes=[1-9]\d*-$/, 'the third request resumes after the bytes the dropped one delivered');
});

test('a server failing every attempt makes the download give up naming the file', async (t) => {
  const hub = await startHub(t);
  hub.injectedFailures = Array(5).fill('503');
  const dir = await tempDir(t);
  await assert.rejects(download(hub, dir), (error: Error) => {
    assert.ok(error instanceof ModelDownloadError);
    assert.match(error.message, new RegExp(`${SHARD} of ${REPO}: gave up after 5 failed attempts in a row \\(last: HTTP 503\\)`));
    return true;
  });
});

test('a corrupted blob fails with a sha256 mismatch naming the file, and neither the file nor its partial is left', async (t) => {
  const hub = await startHub(t);
  hub.corrupted.add(SHARD);
  const dir = await tempDir(t);
  await assert.rejects(download(hub, dir), (error: Error) => {
    assert.ok(error instanceof ModelDownloadError);
    assert.match(error.message, new RegExp(`^${SHARD} from ${REPO}@${COMMIT} is damaged: its sha256 is [0-9a-f]{64}, the hub lists ${sha256(REPO_FILES[SHARD]!)}`));
    return true;
  });
  assert.ok(!(await readdir(dir)).some((name) => name.startsWith(SHARD)));
});

test('a corrupted small file fails against its git blob id', async (t) => {
  const hub = await startHub(t);
  hub.corrupted.add('config.json');
  const dir = await tempDir(t);
  await assert.rejects(download(hub, dir), /^ModelDownloadError: config\.json from .* is damaged: its git-sha1 is/);
});

test('files already present with the listed size and hash are skipped, a modified one is fetched again', async (t) => {
  const hub = await startHub(t);
  const dir = await tempDir(t);
  await download(hub, dir);
  await writeFile(join(dir, 'config.json'), '{"architectures":["edited"]}');
  hub.requests = [];
  const summary = await download(hub, dir);
  await assertCheckpoint(dir);
  assert.deepEqual(summary.downloaded, ['config.json']);
  assert.deepEqual([...summary.skipped].sort(), CHECKPOINT_FILES.filter((name) => name !== 'config.json').sort());
  assert.deepEqual(hub.requests.map((request) => request.path).filter((path) => !path.startsWith('/api/')), [`/${REPO}/resolve/${COMMIT}/config.json`]);
});

test('an unknown revision fails naming the revision and the flag to change', async (t) => {
  const hub = await startHub(t);
  const dir = await tempDir(t);
  await assert.rejects(
    downloadModel({ repo: REPO, dir, endpoint: hub.endpoint, revision: 'v9.9' }),
    /revision "v9\.9" not found in baidu\/Unlimited-OCR \(HTTP 404\): pass an existing branch, tag or commit with --revision/,
  );
});

test('the CLI exits 1 with a clear message when the repository does not exist (the fake hub only hosts v3)', async (t) => {
  const hub = await startHub(t);
  const dir = await tempDir(t);
  const result = await runCli(['model', 'download', 'v1', '--dir', dir, '--endpoint', hub.endpoint], {});
  assert.equal(result.code, 1);
  assert.match(result.output, /scriptorium: repository deepseek-ai\/DeepSeek-OCR not found at http:\/\/127\.0\.0\.1:\d+ \(HTTP 401\), or it is private or gated: then set HF_TOKEN/);
  assert.deepEqual(await readdir(dir), []);
});

test('an unknown repository asked for with a token fails saying the token may lack access', async (t) => {
  const hub = await startHub(t);
  const dir = await tempDir(t);
  await assert.rejects(
    downloadModel({ repo: HUB_REPOSITORIES.v2, dir, endpoint: hub.endpoint, token: 'hf_any' }),
    /^ModelDownloadError: repository deepseek-ai\/DeepSeek-OCR-2 not found at http:\/\/127\.0\.0\.1:\d+ \(HTTP 404\), or HF_TOKEN cannot read it$/,
  );
});

test('the CLI exits 1 with a message pointing at HF_TOKEN when the hub refuses the token, without printing it', async (t) => {
  const hub = await startHub(t);
  hub.requiredToken = 'hf_right';
  const dir = await tempDir(t);
  const result = await runCli(['model', 'download', 'v3', '--dir', dir, '--endpoint', hub.endpoint], { HF_TOKEN: 'hf_wrong_secret' });
  assert.equal(result.code, 1);
  assert.match(result.output, /refused HF_TOKEN \(HTTP 401: Invalid credentials in Authorization header\): set HF_TOKEN to a valid read token/);
  assert.ok(!result.output.includes('hf_wrong_secret'));
});

test('the CLI sends HF_TOKEN as a Bearer header to the hub only, never to the storage host, and never prints it', async (t) => {
  const hub = await startHub(t);
  hub.requiredToken = 'hf_secret_for_test';
  const dir = await tempDir(t);
  const result = await runCli(['model', 'download', 'v3', '--dir', dir, '--endpoint', hub.endpoint], { HF_TOKEN: 'hf_secret_for_test' });
  assert.equal(result.code, 0, result.output);
  await assertCheckpoint(dir);
  assert.match(result.output, new RegExp(`downloaded ${REPO} at commit ${COMMIT} into ${dir}: 6 files fetched`));
  const byServer = (server: SeenRequest['server']) => hub.requests.filter((request) => request.server === server).map((request) => request.authorization);
  assert.ok(byServer('hub').length > 0 && byServer('hub').every((authorization) => authorization === 'Bearer hf_secret_for_test'));
  assert.deepEqual(byServer('storage'), [undefined]);
  assert.ok(!result.output.includes('hf_secret_for_test'));
});

test('a token that cannot be sent as a header is refused before any request, without quoting it', async (t) => {
  const hub = await startHub(t);
  const dir = await tempDir(t);
  await assert.rejects(downloadModel({ repo: REPO, dir, endpoint: hub.endpoint, token: 'hf_first\nhf_second' }), (error: Error) => {
    assert.match(error.message, /^HF_TOKEN holds spaces, line breaks or non-ASCII characters/);
    assert.ok(!error.message.includes('hf_first'));
    return true;
  });
  assert.deepEqual(hub.requests, []);
});
