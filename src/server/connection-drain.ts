import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Ends the HTTP server's client connections at close as soon as none of their requests is in
 * progress, so that `server.close()` (which waits for every connection) finishes once the
 * requests in flight are answered.
 *
 * Node's close alone does not (Node 20): it destroys the connections idle at that moment, but
 * - a connection accepted and never sent a request (a browser's spare or preconnected socket)
 *   counts as busy, and the headers-timeout check that would end it stops with the close: it
 *   stays open until the client closes it;
 * - a kept-alive connection whose request was in flight when the close started answers
 *   `connection: keep-alive` and then idles until `keepAliveTimeout` (Fastify's default 72 s)
 *   or the client closes it.
 * Either held the gateway's close (SIGTERM drain up to `server.drain_timeout_ms`, a test's
 * gateway until Chromium quit).
 *
 * Once {@link ConnectionDrain.start} is called: connections with no request in progress are
 * ended at once; a response in flight whose headers are not sent yet gets `connection: close`
 * (Node then ends its connection after it), and every connection is ended when its last
 * response in flight is done; a connection accepted later is ended at once. "Ended" writes what
 * its socket still buffers, then destroys it (a client that reads nothing keeps it: `serve`'s
 * drain timeout closes every connection). A client that sends a request on an idle
 * connection just as it is ended gets a connection error before anything ran, as with any
 * server closing idle keep-alive connections (the OpenAI and Anthropic SDKs retry those).
 * @see https://nodejs.org/docs/latest-v20.x/api/http.html#serverclosecallback
 * @see https://nodejs.org/docs/latest-v20.x/api/http.html#servercloseidleconnections
 * @see https://fastify.dev/docs/latest/Reference/Server/#forcecloseconnections
 */
export class ConnectionDrain {
  /** Every open connection of the server, with its responses in progress. */
  private readonly open = new Map<Socket, Set<ServerResponse>>();
  private draining = false;

  /** Start tracking `server`'s connections (before it listens). */
  constructor(server: Server) {
    server.on('connection', (socket: Socket) => {
      if (this.draining) endConnection(socket);
      else this.add(socket);
    });
    // Before the app's own listener: a response it ends synchronously is still counted.
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => this.track(req.socket, res));
  }

  /**
   * Begin ending connections (call when the server stops accepting, e.g. in Fastify's
   * `preClose`): idle ones now, the others after their last response in flight. Idempotent.
   */
  start(): void {
    if (this.draining) return;
    this.draining = true;
    for (const [socket, responses] of this.open) {
      if (responses.size === 0) endConnection(socket);
      else for (const res of responses) if (!res.headersSent) res.setHeader('connection', 'close');
    }
  }

  private track(socket: Socket, res: ServerResponse): void {
    const responses = this.open.get(socket) ?? this.add(socket);
    responses.add(res);
    if (this.draining && !res.headersSent) res.setHeader('connection', 'close');
    // 'close' follows 'finish' (the response handed to the socket) or an aborted response.
    res.once('close', () => {
      responses.delete(res);
      if (this.draining && responses.size === 0) endConnection(socket);
    });
  }

  private add(socket: Socket): Set<ServerResponse> {
    const responses = new Set<ServerResponse>();
    this.open.set(socket, responses);
    socket.once('close', () => this.open.delete(socket));
    return responses;
  }
}

/**
 * End a client connection: its side is closed once what its socket still buffers (a response's
 * last bytes) is written, then it is destroyed (as Node does after a `connection: close`
 * response, which may have begun this already).
 */
function endConnection(socket: Socket): void {
  if (socket.destroyed) return;
  if (socket.writable) socket.end();
  if (socket.writableFinished) socket.destroy();
  else socket.once('finish', () => socket.destroy());
}
