import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { oversizedResponse } from './read-upstream-body.js';

/**
 * Parse a byte stream as Server-Sent Events with a real SSE parser: comments and keep-alives,
 * CRLF framing, several events per read, an event split across reads, UTF-8 characters split
 * across reads, `data:` without a space and very long lines are all handled by the parser and
 * the streaming UTF-8 decoder.
 *
 * One event (or one line without its newline) may hold at most `maxEventBytes`: the bytes since
 * the last dispatched event are counted, and a stream that passes the cap is refused (the
 * parser would otherwise buffer an endless line in memory).
 * @throws GatewayError `upstream_invalid_response` for an event larger than `maxEventBytes`.
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
export async function* sseEvents(body: AsyncIterable<Uint8Array>, maxEventBytes = Number.POSITIVE_INFINITY, providerId = 'upstream'): AsyncGenerator<EventSourceMessage> {
  const pending: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => pending.push(e) });
  const decoder = new TextDecoder('utf-8');
  /** Bytes received since the last event was dispatched (an upper bound of the event in progress). */
  let open = 0;
  for await (const chunk of body) {
    open += chunk.byteLength;
    if (open > maxEventBytes) throw oversizedResponse(providerId, 'one stream event', maxEventBytes, 'server.upstream_max_event_bytes');
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (pending.length > 0) {
      // What follows the chunk's last line break is the start of the next event.
      open = chunk.byteLength - (chunk.lastIndexOf(10) + 1);
      for (let i = 0; i < pending.length; i++) yield pending[i]!;
      pending.length = 0;
    }
  }
  const rest = decoder.decode();
  // A final event without its blank line still counts (many servers end that way).
  parser.feed(rest.endsWith('\n') ? `${rest}\n` : `${rest}\n\n`);
  for (const e of pending) yield e;
}
