import type { ClientSink } from './client-sink.js';

/**
 * The answer of a generation the gateway asks for itself (a batch line, a Responses tool-loop
 * turn), as `serveGeneration` sends it: status, headers and a complete body. These are never
 * streamed: a stream is answered as a failure naming `what` streamed. No client can leave, so
 * close listeners are never called.
 */
export class CapturedAnswer implements ClientSink {
  /** `what`: the caller's name for the answer in that failure (`a batch line`, `a tool-loop turn`). */
  constructor(private readonly what: string) {}
  status = 0;
  headers: Record<string, string> = {};
  body: unknown;
  headersSent = false;
  finished = false;
  writeHead(status: number, headers: Record<string, string>): void {
    this.send(status === 200 ? 500 : status, headers, { error: { message: `${this.what} answered with a stream`, type: 'server_error', code: 'internal_error', param: null } });
  }
  write(): undefined {
    return undefined;
  }
  end(): void {}
  send(status: number, headers: Record<string, string>, body: unknown): void {
    if (this.headersSent) return;
    Object.assign(this, { status, headers, body, headersSent: true, finished: true });
  }
  abandon(): void {
    this.finished = true;
  }
  holdEnd(): () => void {
    return () => {};
  }
  onClose(): void {}
  offClose(): void {}
}
