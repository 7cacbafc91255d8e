import type { IncomingHttpHeaders } from 'node:http';
import type { Agent, Dispatcher } from 'undici';
import type { TimeoutsConfig } from '../config/schema.js';
import type { UpstreamCall } from '../providers/types.js';
import { oversizedResponse } from './oversized-response.js';

/**
 * One upstream call in flight, driven through undici's callback API (`dispatcher.dispatch`
 * with a handler) rather than `undici.request`: no response stream object, no async resource,
 * no composed abort signal per call, and no promise per body chunk unless the reader is
 * waiting. On a zero-work upstream this halves the client-side CPU of a call.
 *
 * Reading: wait for {@link head} (status and headers), then read the body exactly one way —
 * {@link text} (whole, capped), {@link cappedText} (an error body, cut) or iteration
 * (`for await (const chunk of exchange)`, with backpressure: the socket is paused while more
 * than {@link HIGH_WATER_BYTES} wait unread). Cancelling is {@link abort}; a consumer that stops
 * iterating early aborts the call too (its connection is not reused, as with a destroyed body).
 * Errors are undici's own (connect, headers/body timeout, socket) or the abort reason; callers
 * map them as before (`transportErrorToGatewayError`).
 * @see https://undici.nodejs.org/#/docs/api/Dispatcher?id=dispatcherdispatchoptions-handler
 */
export class UpstreamExchange implements Dispatcher.DispatchHandler, AsyncIterable<Buffer> {
  statusCode = 0;
  headers: IncomingHttpHeaders = {};
  private controller: Dispatcher.DispatchController | undefined;
  private abortReason: Error | undefined;
  private failure: Error | undefined;
  private headArrived = false;
  private ended = false;
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  /** Whoever waits: for the head, or for body data. */
  private waiter: { resolve: () => void; reject: (err: Error) => void } | undefined;
  /** The body is being collected whole (text, cappedText): never pause the socket. */
  private collecting = false;
  /** Set once the reader stopped at the upstream's end of stream: the rest is dropped. */
  private discardTimer: NodeJS.Timeout | undefined;
  private discarded = 0;

  constructor(call: UpstreamCall, agent: Agent, timeouts: TimeoutsConfig, private readonly live?: LiveUpstreamCalls) {
    const { origin, path } = splitUrl(call.url);
    live?.add(this);
    agent.dispatch({ origin, path, method: 'POST', headers: call.headers, body: call.body, headersTimeout: timeouts.first_token_ms, bodyTimeout: timeouts.idle_ms }, this);
  }

  /** Cancel the call (idempotent); a reader waiting gets `reason`. */
  abort(reason: Error): void {
    if (this.ended || this.failure) return;
    this.abortReason ??= reason;
    if (this.controller) this.controller.abort(reason);
    // Not yet on a connection: undici calls onRequestStart later, which aborts then; whoever
    // waits is told now.
    else this.fail(reason);
  }

  /** Resolves once the status and headers arrived. @throws the call's error. */
  head(): Promise<void> {
    if (this.headArrived) return Promise.resolve();
    return this.wait();
  }

  /**
   * The whole body as UTF-8 text, refused once it passes `maxBytes` (a `content-length` over
   * the cap before reading; the call is aborted, freeing memory at once).
   * @throws GatewayError `upstream_invalid_response` over the cap; the call's error.
   */
  async text(maxBytes: number, providerId: string): Promise<string> {
    const declared = Number(this.headers['content-length']);
    const tooLarge = () => oversizedResponse(providerId, 'the response body', maxBytes, 'server.upstream_max_response_bytes');
    if (declared > maxBytes) {
      const err = tooLarge();
      this.abort(err);
      throw err;
    }
    this.collecting = true;
    this.controller?.resume();
    while (!this.ended) {
      if (this.failure) throw this.failure;
      if (this.queuedBytes > maxBytes) {
        const err = tooLarge();
        this.abort(err);
        throw err;
      }
      await this.wait();
    }
    if (this.queuedBytes > maxBytes) throw tooLarge();
    return this.drainText(Number.POSITIVE_INFINITY);
  }

  /** At most `limit` bytes of the body as UTF-8 text (an error body); the rest is not read. */
  async cappedText(limit: number): Promise<string> {
    this.collecting = true;
    this.controller?.resume();
    while (!this.ended && !this.failure && this.queuedBytes < limit) {
      await this.wait().catch(() => {});
    }
    const text = this.drainText(limit);
    if (!this.ended) this.abort(new Error('error body read'));
    return text;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Buffer> {
    try {
      for (;;) {
        if (this.queue.length > 0) {
          const chunk = this.queue.shift()!;
          this.queuedBytes -= chunk.byteLength;
          if (this.controller?.paused && this.queuedBytes < HIGH_WATER_BYTES) this.controller.resume();
          yield chunk;
          continue;
        }
        if (this.failure) throw this.failure;
        if (this.ended) return;
        await this.wait();
      }
    } finally {
      // The reader stopped early at the upstream's own end of stream (`[DONE]`): whatever still
      // comes is dropped, and the call is aborted if it does not end soon, so the connection
      // is kept for the next call. (A client gone, a timeout or an error abort explicitly.)
      if (!this.ended && !this.failure) this.discardRest();
    }
  }

  // --- undici's handler callbacks -------------------------------------------------------------

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortReason) controller.abort(this.abortReason);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.statusCode = statusCode;
    this.headers = headers;
    this.headArrived = true;
    this.wake();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.discardTimer) {
      this.discarded += chunk.byteLength;
      if (this.discarded > DISCARD_MAX_BYTES) this.abort(new Error('upstream kept sending after its end of stream'));
      return;
    }
    this.queue.push(chunk);
    this.queuedBytes += chunk.byteLength;
    if (!this.collecting && this.queuedBytes >= HIGH_WATER_BYTES) controller.pause();
    this.wake();
  }

  onResponseEnd(): void {
    clearTimeout(this.discardTimer);
    this.ended = true;
    this.settle();
    this.wake();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, err: Error): void {
    this.fail(this.abortReason ?? err);
  }

  // --- internals ----------------------------------------------------------------------------------

  private discardRest(): void {
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.discardTimer = setTimeout(() => this.abort(new Error('upstream did not end after its end of stream')), DISCARD_WAIT_MS);
    this.discardTimer.unref();
    this.controller?.resume();
  }

  private fail(err: Error): void {
    if (this.failure || this.ended) return;
    clearTimeout(this.discardTimer);
    this.failure = err;
    this.settle();
    const w = this.waiter;
    this.waiter = undefined;
    w?.reject(err);
  }

  private settle(): void {
    this.live?.delete(this);
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.resolve();
  }

  private wait(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  private drainText(limit: number): string {
    const chunks = this.queue.splice(0);
    const size = this.queuedBytes;
    this.queuedBytes = 0;
    const buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
    return (buf.byteLength > limit ? buf.subarray(0, limit) : buf).toString('utf8');
  }
}

/** Unread body bytes above which the upstream socket is paused. */
export const HIGH_WATER_BYTES = 64 * 1024;
/** How long a call whose reader stopped at the end of stream may take to end, in ms, before it is aborted. */
const DISCARD_WAIT_MS = 1_000;
/** Most bytes dropped after the end of stream before the call is aborted. */
const DISCARD_MAX_BYTES = 1024 * 1024;

/** The upstream calls in flight, so that a shutdown's drain timeout can cut them all at once. */
export class LiveUpstreamCalls {
  private readonly calls = new Set<UpstreamExchange>();
  add(call: UpstreamExchange): void {
    this.calls.add(call);
  }
  delete(call: UpstreamExchange): void {
    this.calls.delete(call);
  }
  get size(): number {
    return this.calls.size;
  }
  /** Abort every call in flight with `reason`. */
  abortAll(reason: Error): void {
    for (const call of [...this.calls]) call.abort(reason);
  }
}

const splitCache = new Map<string, { origin: string; path: string }>();

/** `origin` and `path` (with query) of an upstream URL, cached: endpoints call a handful of URLs. */
function splitUrl(url: string): { origin: string; path: string } {
  let parts = splitCache.get(url);
  if (!parts) {
    const u = new URL(url);
    parts = { origin: u.origin, path: `${u.pathname}${u.search}` };
    if (splitCache.size >= 1024) splitCache.clear();
    splitCache.set(url, parts);
  }
  return parts;
}
