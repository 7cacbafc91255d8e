import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import { oversizedResponse } from './oversized-response.js';

/**
 * Parses a byte stream as Server-Sent Events with a real SSE parser, one read at a time and
 * synchronously: comments and keep-alives, CRLF framing, several events per read, an event split
 * across reads, UTF-8 characters split across reads, `data:` without a space and very long lines
 * are all handled by the parser and the streaming UTF-8 decoder.
 *
 * One event (or one line without its newline) may hold at most `maxEventBytes`: the bytes since
 * the last dispatched event are counted, and a stream that passes the cap is refused (the
 * parser would otherwise buffer an endless line in memory).
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
export class SseReader {
  private readonly pending: EventSourceMessage[] = [];
  private readonly parser: EventSourceParser;
  // Node's StringDecoder keeps a UTF-8 character split across reads for the next one, like
  // TextDecoder's streaming mode, at a fraction of its cost per call.
  private readonly decoder = new StringDecoder('utf8');
  /** Bytes received since the last event was dispatched (an upper bound of the event in progress). */
  private open = 0;

  constructor(private readonly maxEventBytes = Number.POSITIVE_INFINITY, private readonly providerId = 'upstream') {
    this.parser = createParser({ onEvent: (e) => this.pending.push(e) });
  }

  /**
   * The events completed by one read (an empty array when none: the same array is reused, read
   * it before the next call).
   * @throws GatewayError `upstream_invalid_response` for an event larger than `maxEventBytes`.
   */
  push(chunk: Uint8Array): EventSourceMessage[] {
    this.pending.length = 0;
    this.open += chunk.byteLength;
    if (this.open > this.maxEventBytes) throw oversizedResponse(this.providerId, 'one stream event', this.maxEventBytes, 'server.upstream_max_event_bytes');
    this.parser.feed(this.decoder.write(chunk));
    // What follows the chunk's last line break is the start of the next event.
    if (this.pending.length > 0) this.open = chunk.byteLength - (chunk.lastIndexOf(10) + 1);
    return this.pending;
  }

  /** The stream ended: a final event without its blank line still counts (many servers end that way). */
  end(): EventSourceMessage[] {
    this.pending.length = 0;
    const rest = this.decoder.end();
    this.parser.feed(rest.endsWith('\n') ? `${rest}\n` : `${rest}\n\n`);
    return this.pending;
  }
}
