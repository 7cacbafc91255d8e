import type { FastifyReply } from 'fastify';
import type { ClientSink } from '../pipeline/client-sink.js';
import { holdResponseEnd } from './response-gate.js';

/** The pipeline's {@link ClientSink} over a Fastify reply; one per request. */
export class FastifyClientSink implements ClientSink {
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
   * Write respecting backpressure: undefined at once when the socket buffer has room, else a
   * promise resolved on `drain` — or on `close`, so a vanished client never leaves a stream waiting.
   */
  write(text: string): Promise<void> | undefined {
    const raw = this.reply.raw;
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

  end(text: string): void {
    this.reply.raw.end(text);
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
