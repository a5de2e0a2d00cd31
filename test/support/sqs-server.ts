// A minimal SQS for tests: the two operations the watch uses, ReceiveMessage (with long polling and a
// visibility timeout) and DeleteMessage, over the AWS JSON 1.0 protocol that @aws-sdk/client-sqs 3.x
// speaks (POST /, X-Amz-Target: AmazonSQS.<Operation>, application/x-amz-json-1.0). Signatures are
// not checked.
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SqsMessageRecord {
  messageId: string;
  body: string;
  /** How many times it was received. */
  receives: number;
}

export interface TestSqsServer {
  /** http://127.0.0.1:<port>/000000000000/<queue> */
  queueUrl: string;
  /** Adds a message; returns its id. */
  send(body: string): string;
  /** Messages not deleted yet. */
  readonly messages: readonly SqsMessageRecord[];
  /** Ids of deleted messages, in order. */
  readonly deleted: readonly string[];
  /** Called when a DeleteMessage arrives, before it is carried out and answered. */
  onDelete?: (message: SqsMessageRecord) => Promise<void> | void;
  close(): Promise<void>;
}

interface StoredMessage extends SqsMessageRecord {
  receiptHandle?: string;
  visibleAt: number;
}

export async function startSqsServer(options: { visibilityTimeoutMs: number }): Promise<TestSqsServer> {
  const messages: StoredMessage[] = [];
  const deleted: string[] = [];

  const receive = async (input: { MaxNumberOfMessages?: number; WaitTimeSeconds?: number }, clientGone: () => boolean) => {
    const deadline = Date.now() + 1000 * (input.WaitTimeSeconds ?? 0);
    for (;;) {
      const now = Date.now();
      const visible = messages.filter((message) => message.visibleAt <= now).slice(0, input.MaxNumberOfMessages ?? 1);
      if (clientGone()) return { Messages: [] };
      if (visible.length > 0 || now >= deadline) {
        for (const message of visible) {
          message.receives++;
          message.receiptHandle = randomUUID();
          message.visibleAt = now + options.visibilityTimeoutMs;
        }
        return {
          Messages: visible.map((message) => ({
            MessageId: message.messageId,
            ReceiptHandle: message.receiptHandle,
            Body: message.body,
            MD5OfBody: createHash('md5').update(message.body).digest('hex'),
          })),
        };
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  const remove = async (input: { ReceiptHandle?: string }) => {
    const index = messages.findIndex((message) => message.receiptHandle === input.ReceiptHandle);
    if (index < 0) throw Object.assign(new Error('the receipt handle is not valid'), { type: 'ReceiptHandleIsInvalid' });
    await server.onDelete?.(messages[index]);
    deleted.push(messages[index].messageId);
    messages.splice(index, 1);
    return {};
  };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request as AsyncIterable<Buffer>) chunks.push(chunk);
    const input = JSON.parse(Buffer.concat(chunks).toString() || '{}');
    const operation = String(request.headers['x-amz-target'] ?? '').replace(/^AmazonSQS\./, '');
    // An aborted long poll: what it would have received stays visible.
    const clientGone = () => response.socket === null || response.socket.destroyed;
    let status = 200;
    let output: unknown;
    try {
      if (operation === 'ReceiveMessage') output = await receive(input, clientGone);
      else if (operation === 'DeleteMessage') output = await remove(input);
      else throw Object.assign(new Error(`operation ${operation} is not implemented`), { type: 'UnsupportedOperation' });
    } catch (error) {
      status = 400;
      output = { __type: `com.amazonaws.sqs#${(error as { type?: string }).type ?? 'InternalError'}`, message: (error as Error).message };
    }
    if (clientGone()) return;
    const text = JSON.stringify(output);
    response.writeHead(status, { 'Content-Type': 'application/x-amz-json-1.0', 'x-amzn-RequestId': randomUUID() }).end(text);
  };

  const http = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => response.writeHead(500).end(String(error)));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;

  const server: TestSqsServer = {
    queueUrl: `http://127.0.0.1:${port}/000000000000/scriptorium-events`,
    send(body) {
      const messageId = randomUUID();
      messages.push({ messageId, body, receives: 0, visibleAt: 0 });
      return messageId;
    },
    get messages() {
      return messages.map(({ messageId, body, receives }) => ({ messageId, body, receives }));
    },
    deleted,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
  return server;
}
