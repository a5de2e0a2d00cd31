// Starting and stopping an Express app's HTTP server, shared by `scriptorium serve` and `scriptorium dashboard`.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Express } from 'express';

export function listen(app: Express, host: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host, (error?: Error) => {
      if (error) reject(new Error(`cannot listen on ${host}:${port}: ${error.message}`));
      else resolve(server);
    });
  });
}

/** http://host:port/ as bound. */
export function serverUrl(server: Server): string {
  const { address, port } = server.address() as AddressInfo;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}/`;
}

/** Stops accepting connections and ends the open ones. */
export async function closeServer(server: Server): Promise<void> {
  const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await stopped;
}
