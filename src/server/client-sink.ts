import type { ServerResponse } from 'node:http';

/**
 * Write to the client respecting backpressure: resolves at once when the socket buffer has
 * room, else on `drain` — or on `close`, so a vanished client never leaves a stream waiting.
 */
export function writeToClient(raw: ServerResponse, text: string): Promise<void> | undefined {
  if (text === '' || raw.destroyed || raw.writableEnded) return undefined;
  if (raw.write(text)) return undefined;
  return new Promise((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.on('drain', done);
    raw.on('close', done);
  });
}
