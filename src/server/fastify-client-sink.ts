import type { FastifyReply } from 'fastify';
import type { ClientSink } from '../pipeline/state/client-sink.js';
import { holdResponseEnd } from './response-gate.js';

/** Collected text written at once, without waiting for the end of the turn, in UTF-16 code units. */
const FLUSH_BYTES = 64 * 1024;

/** The pipeline's {@link ClientSink} over a Fastify reply; one per request. */
export class FastifyClientSink implements ClientSink {
  /** Text written in this turn of the event loop, not yet handed to the socket. */
  private buffered = '';
  private flushing: NodeJS.Immediate | undefined;

  constructor(private readonly reply: FastifyReply) {}

  get headersSent(): boolean {
    return this.reply.sent || this.reply.raw.headersSent;
  }

  get finished(): boolean {
    return this.reply.raw.writableFinished;
  }

  writeHead(status: number, headers: Record<string, string>): void {
    this.reply.hijack();
    this.reply.raw.writeHead(status, headers);
  }

  /**
   * Write respecting backpressure. Text written in one turn of the event loop (the events of
   * one upstream read) goes out as one chunk: it is collected and written once, at the end of
   * the turn (`setImmediate`), or at once when {@link FLUSH_BYTES} are waiting. Returns
   * undefined while the socket takes more, else a promise resolved on `drain` — or on `close`,
   * so a vanished client never leaves a stream waiting.
   */
  write(text: string): Promise<void> | undefined {
    const raw = this.reply.raw;
    if (text === '' || raw.destroyed || raw.writableEnded) return undefined;
    this.buffered += text;
    if (this.buffered.length >= FLUSH_BYTES || raw.writableNeedDrain) return this.flush();
    if (!this.flushing) {
      this.flushing = setImmediate(this.flushLater);
    }
    return undefined;
  }

  /** Write what was collected now; a promise when the socket is full. */
  private flush(): Promise<void> | undefined {
    if (this.flushing) {
      clearImmediate(this.flushing);
      this.flushing = undefined;
    }
    const raw = this.reply.raw;
    const text = this.buffered;
    this.buffered = '';
    if (text === '' || raw.destroyed || raw.writableEnded) return undefined;
    if (raw.write(text) && !raw.writableNeedDrain) return undefined;
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

  private readonly flushLater = () => {
    this.flushing = undefined;
    void this.flush();
  };

  end(text: string): void {
    if (this.flushing) {
      clearImmediate(this.flushing);
      this.flushing = undefined;
    }
    const out = this.buffered + text;
    this.buffered = '';
    this.reply.raw.end(out);
  }

  send(status: number, headers: Record<string, string>, body: unknown): void {
    if (this.headersSent) return;
    // Fastify serializes the object as application/json; charset=utf-8.
    this.reply.code(status).headers(headers).send(body);
  }

  abandon(): void {
    if (!this.reply.sent) this.reply.hijack();
  }

  holdEnd(): () => void {
    return holdResponseEnd(this.reply.raw);
  }

  onClose(listener: () => void): void {
    this.reply.raw.on('close', listener);
  }

  offClose(listener: () => void): void {
    this.reply.raw.off('close', listener);
  }
}
