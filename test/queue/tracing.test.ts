// Traces across the queue, exported by OTLP/HTTP to a local receiver: one trace per document, from
// the producer's flow through every page job to the document's assembly.
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { pino } from 'pino';

import { startOcrWorkers } from '../../src/worker/ocr-workers.js';
import type { OcrJobOptions } from '../../src/jobs/job-types.js';
import { enqueueDocuments } from '../../src/producer/enqueue.js';
import { DocumentWatcher } from '../../src/queue/document-watcher.js';
import { redisOptions } from '../../src/queue/redis.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { LETTER, makePdf } from '../support/make-documents.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

const OCR: OcrJobOptions = { variant: 'v3', task: 'parse', mode: 'tiny', dpi: 36, maxNewTokens: 4 };

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: { stringValue?: string } }[];
}

/** OTLP/HTTP JSON receiver: POST /v1/traces. */
async function startReceiver(): Promise<{ url: string; spans: OtlpSpan[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces' && request.headers['content-type']?.startsWith('application/json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const resource of body.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        response.writeHead(404).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, spans, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('OpenTelemetry traces over OTLP', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let root: string;

  before(async () => {
    receiver = await startReceiver();
    // Read once, by the first queue that asks for telemetry in this process.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    root = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-tracing-'));
  });
  after(async () => {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    await receiver?.close();
    await rm(root, { recursive: true, force: true });
  });

  test('a document is one trace: its flow, each page job and its assembly', async () => {
    const storage = new FileStorage(path.join(root, 'storage'));
    const input = path.join(root, 'two-pages.pdf');
    await writeFile(input, await makePdf([LETTER, LETTER], 3));
    const workers = await startOcrWorkers({
      model: { dir: await tinyCheckpoint('v3'), synthetic: true },
      checkpointId: 'sha256:tiny-v3',
      threads: 1,
      storage,
      redisUrl: redis.url,
      logger: pino({ level: 'silent' }),
    });
    const watcher = await DocumentWatcher.start(redisOptions(redis.url, 'worker'));
    let docId: string;
    try {
      docId = (await enqueueDocuments([input], { ocr: OCR, storage, connection: redisOptions(redis.url, 'client') })).queued[0].docId;
      const [settled] = await watcher.waitFor([docId]);
      assert.equal(settled.status, 'completed');
    } finally {
      await watcher.close();
      await workers.close(); // flushes the spans
    }

    const spans = receiver.spans;
    const jobIdOf = (span: OtlpSpan) => span.attributes?.find(({ key }) => key === 'bullmq.job.id')?.value.stringValue;
    const consumers = spans.filter((span) => span.kind === 5); // CONSUMER
    const processed = (jobId: string) => consumers.find((span) => jobIdOf(span) === jobId);
    const pageSpans = [`${docId}.p1-1`, `${docId}.p2-2`].map(processed);
    const documentSpan = processed(docId);
    assert.ok(pageSpans.every(Boolean) && documentSpan, `consumer spans: ${consumers.map((span) => `${span.name} ${jobIdOf(span)}`).join(', ')}`);
    const producer = spans.find((span) => span.kind === 4 && span.name.startsWith('addFlow')); // PRODUCER
    assert.ok(producer, `spans: ${spans.map((span) => `${span.name}/${span.kind}`).join(', ')}`);
    for (const span of [...pageSpans, documentSpan]) assert.equal(span?.traceId, producer.traceId, span?.name);
  });
});
