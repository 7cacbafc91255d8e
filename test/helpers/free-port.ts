import { createServer } from 'node:net';

/** A TCP port free on 127.0.0.1 right now (listen on 0, read it, close): for processes a test spawns. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}
