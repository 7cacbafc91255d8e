/** Per-request response state shared by the pipeline's stages and attempts (kept in state/: it imports neither). */

/**
 * Whether the client went away: a flag read on every part of a stream, and an AbortSignal made
 * only when something must listen (a wait for a connection slot), since
 * creating one costs more than the flag.
 */
export class ClientGone {
  aborted = false;
  private controller: AbortController | undefined;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.controller?.abort();
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort();
    }
    return this.controller.signal;
  }
}

/**
 * Mutable state of one request's response across attempts. `headersSent` becomes true when the
 * 200 and the SSE headers are out (a keep-alive comment forces that); `outputStarted` when the
 * first generated content is — failover is possible until then.
 */
export interface ResponseState {
  headersSent: boolean;
  outputStarted: boolean;
  readonly clientGone: ClientGone;
  keepAlive: NodeJS.Timeout | undefined;
  /** Time the current attempt waited for a local connection slot, in ms (not the upstream's time). */
  poolWaitMs: number;
  /** The stream's `content-type` when it is not Server-Sent Events (the API's `streamFraming`). */
  streamContentType?: string;
  /** The upstream call in flight, cancelled at once when the client goes away. */
  upstream?: { abort(reason: Error): void } | undefined;
}
