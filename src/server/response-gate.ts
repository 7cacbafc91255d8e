import type { ServerResponse } from 'node:http';

/**
 * Hold back the end of a response until `release()` is called: `res.end(...)` (the last chunk
 * of a stream, `data: [DONE]`, or the whole body of a non-streamed response, which Fastify
 * sends with `end(payload)`) is kept and replayed on release. Used by `records.durability:
 * strict`, so that a client never holds a complete answer whose generation record is not yet
 * committed. Release is idempotent; a response never ended is left alone.
 */
export function holdResponseEnd(res: ServerResponse): () => void {
  let held: unknown[] | undefined;
  let released = false;
  const end = res.end;
  res.end = function holdEnd(this: ServerResponse, ...args: unknown[]) {
    if (released) return end.apply(this, args as never);
    held = args;
    return this;
  } as ServerResponse['end'];
  return () => {
    if (released) return;
    released = true;
    res.end = end;
    if (held) res.end(...(held as Parameters<ServerResponse['end']>));
  };
}
