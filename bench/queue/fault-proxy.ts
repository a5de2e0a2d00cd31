// A TCP proxy the soak puts between the workers and a server (Redis, the S3 server) to throw network
// faults at them: refuse (every connection dropped, new ones closed at once), stall (bytes held, in
// both directions, until the stall ends), slow (every chunk delayed), and retarget (connections
// dropped, new ones sent to another server: a failover).
import net from 'node:net';

export type ProxyMode = { kind: 'pass' } | { kind: 'refuse' } | { kind: 'stall' } | { kind: 'slow'; delayMs: number };

export class FaultProxy {
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  /** Chunks held by a stall, sent in order when it ends. */
  readonly #held: Array<() => void> = [];
  #upstreamPort: number;
  #mode: ProxyMode = { kind: 'pass' };

  private constructor(upstreamPort: number) {
    this.#upstreamPort = upstreamPort;
    this.#server = net.createServer((client) => this.#connect(client));
  }

  /** Listens on a free port of 127.0.0.1 and forwards to 127.0.0.1:upstreamPort. */
  static async start(upstreamPort: number): Promise<FaultProxy> {
    const proxy = new FaultProxy(upstreamPort);
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.#server.address() as net.AddressInfo).port;
  }

  set mode(mode: ProxyMode) {
    this.#mode = mode;
    if (mode.kind === 'refuse') this.dropConnections();
    if (mode.kind !== 'stall') for (const send of this.#held.splice(0)) send();
  }

  /** Drops every open connection and sends new ones to another server. */
  retarget(upstreamPort: number): void {
    this.#upstreamPort = upstreamPort;
    this.dropConnections();
  }

  dropConnections(): void {
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
    this.#held.length = 0;
  }

  async close(): Promise<void> {
    this.dropConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #connect(client: net.Socket): void {
    if (this.#mode.kind === 'refuse') {
      client.destroy();
      return;
    }
    const upstream = net.connect(this.#upstreamPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        this.#sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    this.#forward(client, upstream);
    this.#forward(upstream, client);
  }

  #forward(from: net.Socket, to: net.Socket): void {
    // One chain per direction keeps the chunks in order whatever the delays.
    let previous = Promise.resolve();
    from.on('data', (chunk: Buffer) => {
      previous = previous.then(() => this.#deliver(() => to.destroyed || to.write(chunk)));
    });
  }

  #deliver(send: () => void): Promise<void> {
    const mode = this.#mode;
    if (mode.kind === 'stall') return new Promise((resolve) => this.#held.push(() => resolve(send())));
    if (mode.kind === 'slow') return new Promise((resolve) => setTimeout(() => resolve(send()), mode.delayMs));
    send();
    return Promise.resolve();
  }
}
