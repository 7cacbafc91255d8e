import { decodeJsonStringBody, JSON_STRING_BODY } from '../json-string-body.js';

/**
 * The fast path of the OpenAI stream transform: the one shape most chunks of a chat stream
 * have — a text delta of choice 0 with nothing else in it — recognised by one anchored regular
 * expression instead of `JSON.parse` (which builds five objects per chunk and was the largest
 * per-chunk cost of a relayed stream, issue #21).
 *
 * The pattern accepts only chunks whose every field has a known meaning for the transform, in
 * the order OpenAI-compatible servers write them:
 * `{"id":"…","object":"chat.completion.chunk","created":N,"model":"…"` then optional
 * `"service_tier":"…"` and `"system_fingerprint":"…"|null`, then
 * `"choices":[{"index":0,"delta":{["role":"assistant",]"content":"…"[,"refusal":null]}[,"logprobs":null],"finish_reason":null}]`,
 * then optional `"usage":null` and `"obfuscation":"…"`, and no whitespace between tokens. Any
 * other chunk (more fields, another order, whitespace, reasoning, tool calls, a finish reason,
 * usage, an error, logprobs, escapes in the id or model) does not match and is parsed with
 * `JSON.parse` as before, so a match reads exactly what `JSON.parse` would have read.
 *
 * The content must be a valid JSON string body ({@link JSON_STRING_BODY}); one with an escape is
 * decoded with `JSON.parse` of the string literal alone.
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 */
const PLAIN_TEXT_CHUNK = new RegExp(
  String.raw`^\{"id":"([^"\\]*)","object":"chat\.completion\.chunk","created":\d+,"model":"[^"\\]*"(?:,"service_tier":"[^"\\]*")?(?:,"system_fingerprint":(?:"[^"\\]*"|null))?,"choices":\[\{"index":0,"delta":\{(?:"role":"assistant",)?"content":"(${JSON_STRING_BODY})"(?:,"refusal":null)?\}(?:,"logprobs":null)?,"finish_reason":null\}\](?:,"usage":null)?(?:,"obfuscation":"[^"\\]*")?\}$`,
);

/** What a plain text chunk carries: the chunk's `id` and the delta's text (decoded; may be ''). */
export interface PlainTextChunk {
  id: string;
  text: string;
}

/**
 * Read `data` (one SSE event's data) as a plain text chunk, or return undefined when it is any
 * other chunk (which the caller parses in full).
 */
export function readPlainTextChunk(data: string): PlainTextChunk | undefined {
  // A cheap rejection first: every plain text chunk starts this way.
  if (!data.startsWith('{"id":"')) return undefined;
  const m = PLAIN_TEXT_CHUNK.exec(data);
  if (m === null) return undefined;
  return { id: m[1]!, text: decodeJsonStringBody(m[2]!) };
}
