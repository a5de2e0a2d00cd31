// The soak's parts (bench/queue/): the fault proxy's modes, the audit of results, queues and memory,
// and the delay engine that stands in for the real one; never speed.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Queue } from 'bullmq';

import { FaultProxy } from '../../bench/queue/fault-proxy.js';
import { auditResults, countMarkerWrite, memoryGrowth, undrainedQueues, type MarkerWrites } from '../../bench/queue/soak-audit.js';
import { documentResultKeys, pageAttemptKeys, pageResultKey } from '../../src/jobs/storage-layout.js';
import { DOCUMENTS } from '../../src/queue/queue-names.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';

/** An echo server: every byte it receives comes back. */
async function startEcho(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      sockets.forEach((socket) => socket.destroy());
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Connects through the proxy, sends `text`, and resolves with what came back within waitMs ('' when nothing did, 'closed' when the connection closed). */
function roundTrip(port: number, text: string, waitMs: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let received = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString();
      if (received === text) finish(received);
    });
    socket.on('close', () => finish(received || 'closed'));
    const timer = setTimeout(() => finish(received), waitMs);
    function finish(result: string) {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    }
  });
}

describe('FaultProxy', () => {
  test('passes bytes, refuses, stalls until the stall ends, slows, and retargets', async () => {
    const first = await startEcho();
    const second = await startEcho();
    const proxy = await FaultProxy.start(first.port);
    try {
      assert.equal(await roundTrip(proxy.port, 'hello', 2000), 'hello');

      proxy.mode = { kind: 'refuse' };
      assert.equal(await roundTrip(proxy.port, 'refused', 2000), 'closed');

      proxy.mode = { kind: 'stall' };
      const stalled = roundTrip(proxy.port, 'stalled', 5000);
      assert.equal(await roundTrip(proxy.port, 'held', 300), '', 'nothing gets through a stall');
      proxy.mode = { kind: 'pass' };
      assert.equal(await stalled, 'stalled', 'the held bytes go through once the stall ends');

      proxy.mode = { kind: 'slow', delayMs: 50 };
      assert.equal(await roundTrip(proxy.port, 'slow', 5000), 'slow');
      proxy.mode = { kind: 'pass' };

      // Tell the servers apart: the second one is closed after the retarget, so a reply proves it was reached.
      proxy.retarget(second.port);
      await first.close();
      assert.equal(await roundTrip(proxy.port, 'moved', 2000), 'moved');
    } finally {
      await proxy.close();
      await second.close();
    }
  });
});

describe('auditResults', () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-soak-audit-'));
  });
  after(() => rm(root, { recursive: true, force: true }));

  const GOOD = 'a'.repeat(32);
  const BAD = 'b'.repeat(32);

  test('passes a document read once, and names each way a document can be wrong', async () => {
    const storage = new FileStorage(path.join(root, 'storage'));
    const documentJson = (pages: number[], failedPages: Array<{ page: number; reason: string }>) => Buffer.from(JSON.stringify({ pages: pages.map((page) => ({ page })), failedPages }));
    await storage.put(documentResultKeys(GOOD).json, documentJson([1], [{ page: 2, reason: 'timed out' }]));
    await storage.put(pageResultKey(GOOD, 1, 'json'), Buffer.from('{}'));
    // A try of page 2 that never became its result: litter, counted, not a result.
    await storage.put(pageAttemptKeys(GOOD, 2, 'a1').key, Buffer.from('{}'));
    // Page 1 listed twice, page 2 failed without a reason although its result exists, page 3 done without a result.
    await storage.put(documentResultKeys(BAD).json, documentJson([1, 1, 3], [{ page: 2, reason: '' }]));
    await storage.put(pageResultKey(BAD, 1, 'json'), Buffer.from('{}'));
    await storage.put(pageResultKey(BAD, 2, 'json'), Buffer.from('{}'));

    // Each assembly's marker write, as the S3 server reports it: GOOD assembled once, BAD twice.
    const markers = new Map<string, MarkerWrites>();
    for (const key of [documentResultKeys(GOOD).failedPages, documentResultKeys(BAD).done, documentResultKeys(BAD).failedPages]) countMarkerWrite(markers, key);
    countMarkerWrite(markers, pageResultKey(GOOD, 1, 'json'));
    countMarkerWrite(markers, documentResultKeys(GOOD).json);
    assert.deepEqual(markers, new Map([[GOOD, { done: 0, failedPages: 1 }], [BAD, { done: 1, failedPages: 1 }]]));

    const good = await auditResults([{ docId: GOOD, pages: 2 }], storage, markers);
    assert.deepEqual(good, { donePages: 1, failedPages: 1, reasons: new Map([['timed out', 1]]), leftAttempts: 1, problems: [] });

    const bad = await auditResults([{ docId: BAD, pages: 3 }], storage, markers);
    assert.deepEqual(bad.problems, [
      `${BAD}: assembled 2 times (_DONE written 1 times, _FAILED_PAGES 1)`,
      `${BAD}: document.json lists pages 1,1,2,3, not 1…3 once each`,
      `${BAD}: page 3 is listed done but has no result`,
      `${BAD}: page 2 failed without a reason`,
      `${BAD}: page 2 is reported failed but its result exists`,
      `${BAD}: 2 page results stored for 3 pages done`,
    ]);

    const never = await auditResults([{ docId: 'c'.repeat(32), pages: 1 }], storage, markers);
    assert.equal(never.problems.length, 2);
    assert.match(never.problems[0], /assembled 0 times/);
    assert.match(never.problems[1], /no readable document.json/);
  });
});

describe('memoryGrowth', () => {
  test('flags memory still growing past the warm-up, not the warm-up itself nor a life too short to judge', () => {
    const rule = { warmUpSamples: 4, judgedAfterSamples: 2 };
    assert.equal(memoryGrowth([60, 180, 240, 250, 245, 250], rule), undefined, 'a level after the rise');
    assert.equal(memoryGrowth([60, 180, 240, 250, 280, 312], rule), undefined, 'within 1.25 times the warmed-up level');
    assert.deepEqual(memoryGrowth([60, 180, 240, 250, 280, 313], rule), { warmedUp: 250, last: 313 });
    assert.equal(memoryGrowth([60, 80, 120, 200, 400], rule), undefined, 'a process killed before it was judged');
    assert.deepEqual(memoryGrowth([60, 80, 120, 200, 400, 450], rule), { warmedUp: 200, last: 450 }, 'the same rise once judged');
  });
});

describe('undrainedQueues', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();

  test('names a queue holding an unfinished job, and nothing once it is gone', async () => {
    await redis.flush();
    const documents = new Queue(DOCUMENTS.name, { connection: redisOptions(redis.url, 'client'), prefix: DOCUMENTS.prefix });
    try {
      const job = await documents.add('document', { docId: 'x' });
      assert.deepEqual(await undrainedQueues(redis.url, ['v3'], 0), [`queue ${DOCUMENTS.name} is not drained: 1 waiting`]);
      await job.remove();
      assert.deepEqual(await undrainedQueues(redis.url, ['v3'], 0), []);
    } finally {
      await documents.close();
    }
  });
});

describe('the delay engine', () => {
  test('stands in for OcrEngine.load: no weights, one result per page, the variant asked for', async () => {
    process.env.SCRIPTORIUM_BENCH_DELAY_MS = '5';
    await import('../../bench/queue/delay-engine.js');
    const { OcrEngine } = await import('../../src/engine/ocr-engine.js');
    const engine = await OcrEngine.load(path.join(os.tmpdir(), 'no-checkpoint-here'), { variant: 'v1' });
    const image = { width: 2, height: 2, data: Buffer.alloc(12) };
    const results = await engine.recognizePages([image, image]);
    assert.equal(engine.variant, 'v1');
    assert.equal(results.length, 2);
    assert.ok(results.every((result) => result.markdown.length > 0 && result.finish === 'eos' && result.timings.decode === 5));
  });
});
