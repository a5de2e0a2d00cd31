// Starting and stopping an Express app's HTTP server, shared by `scriptorium serve` and `scriptorium dashboard`.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Express } from 'express';

/** An app being served: where, and how to stop it. */
export interface ServedApp {
  /** http://host:port/ as bound. */
  url: string;
  /** Stops accepting requests, ends open ones, then closes what the app used; once, however often called. */
  close(): Promise<void>;
}

/**
 * Serves `app` on host:port (0: any free port). `closeResources` closes what the app uses (its Redis
 * connections): after the server on close(), or at once when the server cannot listen.
 */
export async function serveApp(app: Express, host: string, port: number, closeResources: () => Promise<void>): Promise<ServedApp> {
  let server: Server;
  try {
    server = await listen(app, host, port);
  } catch (error) {
    await closeResources();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    url: serverUrl(server),
    close() {
      closing ??= (async () => {
        await closeServer(server);
        await closeResources();
      })();
      return closing;
    },
  };
}

function listen(app: Express, host: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host, (error?: Error) => {
      if (error) reject(new Error(`cannot listen on ${host}:${port}: ${error.message}`));
      else resolve(server);
    });
  });
}

function serverUrl(server: Server): string {
  const { address, port } = server.address() as AddressInfo;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}/`;
}

/** Stops accepting connections and ends the open ones. */
async function closeServer(server: Server): Promise<void> {
  const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await stopped;
}
