import { createParser, type EventSourceMessage } from 'eventsource-parser';

/**
 * Parse a byte stream as Server-Sent Events with a real SSE parser: comments and keep-alives,
 * CRLF framing, several events per read, an event split across reads, UTF-8 characters split
 * across reads, `data:` without a space and very long lines are all handled by the parser and
 * the streaming UTF-8 decoder.
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
export async function* sseEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<EventSourceMessage> {
  const pending: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => pending.push(e) });
  const decoder = new TextDecoder('utf-8');
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (pending.length > 0) {
      for (let i = 0; i < pending.length; i++) yield pending[i]!;
      pending.length = 0;
    }
  }
  const rest = decoder.decode();
  // A final event without its blank line still counts (many servers end that way).
  parser.feed(rest.endsWith('\n') ? `${rest}\n` : `${rest}\n\n`);
  for (const e of pending) yield e;
}
