/**
 * Where the pipeline writes its answer to the client: the one seam between the request pipeline
 * and the HTTP server (src/server/fastify-client-sink.ts implements it over Fastify's reply).
 * A response is either one complete body (`send`) or a stream (`writeHead`, `write`…, `end`).
 */
export interface ClientSink {
  /** Whether the status line and headers are out (by `writeHead` or `send`). */
  readonly headersSent: boolean;
  /** Whether the whole response was handed over: a close after that is no client leaving. */
  readonly finished: boolean;
  /** Start a streamed response: status and headers, sent at once. */
  writeHead(status: number, headers: Record<string, string>): void;
  /**
   * Write stream text. Resolves at once (undefined) when the socket buffer has room, else a
   * promise for when it drains or the client goes: backpressure without waiting on a dead socket.
   */
  write(text: string): Promise<void> | undefined;
  /** Write the last text and end the stream. */
  end(text: string): void;
  /** Send one complete JSON response (nothing happens when headers are already out). */
  send(status: number, headers: Record<string, string>, body: unknown): void;
  /** The client is gone: send nothing more and let the server forget the request. */
  abandon(): void;
  /**
   * Hold back the end of the response (the last stream text, or a whole body sent with `send`)
   * until the returned release function is called; used by `records.durability: strict` so a
   * client never holds a complete answer whose record is not committed. Release is idempotent.
   */
  holdEnd(): () => void;
  /** Call `listener` when the connection closes (finished or not). */
  onClose(listener: () => void): void;
  offClose(listener: () => void): void;
}
