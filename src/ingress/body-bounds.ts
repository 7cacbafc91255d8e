import { GatewayError } from '../errors/gateway-error.js';
import { MAX_EMBEDDING_INPUTS } from './openai/embeddings/embedding-request-schema.js';

/**
 * List lengths checked before a request body meets its schema. A schema validator walks every
 * element of a list before it reports that the list is too long, and every message and content
 * part costs event-loop time all along the pipeline: a 10 MB body of 340,000 one-word messages
 * held the loop for seconds. Counting is O(number of items) with no per-item work, so it runs
 * first and refuses the body at once.
 */
export interface BodyBounds {
  /** Most entries of `messages` (config `server.max_messages`). */
  maxMessages: number;
  /** Most content parts over all messages together (config `server.max_content_parts`). */
  maxContentParts: number;
}

/** Top-level lists with a fixed limit in the schemas, with the schema's own message. */
const FIXED: ReadonlyArray<[field: string, max: number, message: string]> = [
  ['tools', 512, 'at most 512 tools are allowed'],
  ['stop', 4, 'at most 4 stop sequences are allowed'],
  ['input', MAX_EMBEDDING_INPUTS, `at most ${MAX_EMBEDDING_INPUTS} inputs per request`],
];

function tooMany(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', `${param}: ${message}`, { param });
}

/**
 * Refuse a body whose lists are longer than their limits, before any schema runs.
 * @throws GatewayError `invalid_request` (400) naming the list: `messages` over
 *   `bounds.maxMessages`, `messages[i].content` when the parts of all messages together exceed
 *   `bounds.maxContentParts`, `tools` over 512, `stop` over 4, embeddings `input` over 2048.
 */
export function checkBodyBounds(body: unknown, bounds: BodyBounds): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const b = body as Record<string, unknown>;
  for (const [field, max, message] of FIXED) {
    const v = b[field];
    if (Array.isArray(v) && v.length > max) throw tooMany(field, message);
  }
  const messages = b.messages;
  if (!Array.isArray(messages)) return;
  if (messages.length > bounds.maxMessages) {
    throw tooMany('messages', `${messages.length} messages; at most ${bounds.maxMessages} are allowed (server.max_messages)`);
  }
  let parts = 0;
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    const content = m !== null && typeof m === 'object' ? (m as { content?: unknown }).content : undefined;
    if (!Array.isArray(content)) continue;
    parts += content.length;
    if (parts > bounds.maxContentParts) {
      throw tooMany(`messages[${i}].content`, `more than ${bounds.maxContentParts} content parts in all messages together (server.max_content_parts)`);
    }
  }
}
