import type { ClientSink } from '../state/client-sink.js';

/**
 * The answer of one batch line, as {@link serveGeneration} sends it: a complete body (batch
 * lines never stream; a stream is answered as a failure). No client can leave, so close
 * listeners are never called.
 */
export class CapturedAnswer implements ClientSink {
  status = 0;
  headers: Record<string, string> = {};
  body: unknown;
  headersSent = false;
  finished = false;
  writeHead(status: number, headers: Record<string, string>): void {
    this.send(status === 200 ? 500 : status, headers, { error: { message: 'a batch line answered with a stream', type: 'server_error', code: 'internal_error', param: null } });
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
