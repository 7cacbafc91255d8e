import { EventStreamCodec, type Message, type MessageHeaders } from '@smithy/eventstream-codec';
import { GatewayError } from '../errors/gateway-error.js';
import { oversizedResponse } from './oversized-response.js';

/** One decoded event-stream message as the stream transforms read it (the shape of an SSE event). */
export interface AwsStreamEvent {
  /** `:event-type` (`contentBlockDelta`, `chunk` …); for an exception `:exception-type`; for an error message `error`. */
  event: string | undefined;
  /** The payload as UTF-8 text (JSON for Bedrock); for an error message `{"code": <:error-code>, "message": <:error-message>}`. */
  data: string;
}

/** The smallest message: the 12-byte prelude (total length, headers length, prelude CRC) and the 4-byte message CRC. */
const MIN_MESSAGE_BYTES = 16;

const decoder = new TextDecoder('utf-8');
const encoder = new TextEncoder();
/** `@smithy/eventstream-codec` needs both converters; the platform's are the same as `@smithy/util-utf8`'s. */
const codec = new EventStreamCodec((input: Uint8Array) => decoder.decode(input), (input: string) => encoder.encode(input));

const header = (headers: MessageHeaders, name: string): string | undefined => {
  const h = headers[name];
  return h && h.type === 'string' ? h.value : undefined;
};

/** The error for bytes that are not a valid event stream (bad length, CRC, or a cut message at the end). */
const malformed = (providerId: string, what: string) =>
  new GatewayError('upstream_invalid_response', `the upstream's event stream is malformed: ${what}`, { metadata: { provider_name: providerId } });

/**
 * Reads a byte stream in AWS's binary event-stream framing (`application/vnd.amazon.eventstream`:
 * Bedrock's ConverseStream and InvokeModelWithResponseStream) with the same `push(chunk)` /
 * `end()` shape as {@link SseReader}: the bytes are buffered, each whole message (its length is
 * the prelude's first big-endian u32) is cut out and decoded by `@smithy/eventstream-codec`
 * (which checks both CRCs), so a message split at any byte, or several in one read, decode the
 * same. Messages become `{event, data}`: `:message-type: event` → the `:event-type` header;
 * `exception` → the `:exception-type` header (Bedrock's `throttlingException`,
 * `modelStreamErrorException` …); `error` → event `error` with `{code, message}` from the
 * `:error-code` and `:error-message` headers.
 *
 * One message may hold at most `maxEventBytes` (its declared length is checked before it is
 * buffered).
 * @see https://docs.aws.amazon.com/AmazonS3/latest/API/RESTSelectObjectAppendix.html (the framing)
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html
 */
export class AwsEventStreamReader {
  private readonly pending: AwsStreamEvent[] = [];
  private buffer: Uint8Array = new Uint8Array(0);

  constructor(private readonly maxEventBytes = Number.POSITIVE_INFINITY, private readonly providerId = 'upstream') {}

  /**
   * The messages completed by one read (an empty array when none: the same array is reused,
   * read it before the next call).
   * @throws GatewayError `upstream_invalid_response` for a message larger than `maxEventBytes`,
   *   or bytes that are not an event-stream message (bad length or CRC).
   */
  push(chunk: Uint8Array): AwsStreamEvent[] {
    this.pending.length = 0;
    if (chunk.byteLength === 0) return this.pending;
    this.buffer = this.buffer.byteLength === 0 ? chunk : concat(this.buffer, chunk);
    let offset = 0;
    while (this.buffer.byteLength - offset >= 4) {
      const view = new DataView(this.buffer.buffer, this.buffer.byteOffset + offset);
      const total = view.getUint32(0, false);
      if (total > this.maxEventBytes) throw oversizedResponse(this.providerId, 'one stream event', this.maxEventBytes, 'server.upstream_max_event_bytes');
      if (total < MIN_MESSAGE_BYTES) throw malformed(this.providerId, `a message declares ${total} bytes (at least ${MIN_MESSAGE_BYTES})`);
      if (this.buffer.byteLength - offset < total) break;
      this.pending.push(this.decode(this.buffer.subarray(offset, offset + total)));
      offset += total;
    }
    // Keep only the unfinished message (a copy, so the read's whole chunk is not held).
    this.buffer = offset === 0 ? this.buffer : this.buffer.slice(offset);
    return this.pending;
  }

  /**
   * The stream ended.
   * @throws GatewayError `upstream_invalid_response` when a message was cut (bytes left over).
   */
  end(): AwsStreamEvent[] {
    this.pending.length = 0;
    if (this.buffer.byteLength > 0) {
      const left = this.buffer.byteLength;
      this.buffer = new Uint8Array(0);
      throw malformed(this.providerId, `the stream ended inside a message (${left} bytes left over)`);
    }
    return this.pending;
  }

  private decode(bytes: Uint8Array): AwsStreamEvent {
    let message: Message;
    try {
      message = codec.decode(bytes);
    } catch (err) {
      throw malformed(this.providerId, err instanceof Error ? err.message : String(err));
    }
    const type = header(message.headers, ':message-type');
    const data = decoder.decode(message.body);
    if (type === 'exception') return { event: header(message.headers, ':exception-type'), data };
    if (type === 'error') return { event: 'error', data: JSON.stringify({ code: header(message.headers, ':error-code') ?? null, message: header(message.headers, ':error-message') ?? data }) };
    return { event: header(message.headers, ':event-type'), data };
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}
