/**
 * Anthropic Messages API shapes for tests, written from Anthropic's API reference (streaming
 * events, message object, error envelope, models list): every event and body a test receives
 * is checked against them. Strict where the reference fixes the fields; `passthrough` where
 * the API may add fields (usage details, new block types from an `anthropic` upstream).
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 * @see https://docs.anthropic.com/en/api/messages
 */
import { z } from 'zod';

const count = z.number().int().min(0);
const usage = z
  .object({
    input_tokens: count,
    output_tokens: count,
    cache_creation_input_tokens: count.nullable().optional(),
    cache_read_input_tokens: count.nullable().optional(),
  })
  .passthrough();

const stopReason = z.enum(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'pause_turn', 'refusal', 'model_context_window_exceeded']);

const textBlock = z.object({ type: z.literal('text'), text: z.string() }).passthrough();
const thinkingBlock = z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }).strict();
const redactedBlock = z.object({ type: z.literal('redacted_thinking'), data: z.string() }).strict();
const toolUseBlock = z.object({ type: z.literal('tool_use'), id: z.string().min(1), name: z.string().min(1), input: z.record(z.unknown()) }).passthrough();
const contentBlock = z.discriminatedUnion('type', [textBlock, thinkingBlock, redactedBlock, toolUseBlock]);

/** A complete message (`messages.create` without streaming). */
export const messageSchema = z
  .object({
    id: z.string().min(1),
    type: z.literal('message'),
    role: z.literal('assistant'),
    model: z.string().min(1),
    content: z.array(contentBlock),
    stop_reason: stopReason,
    stop_sequence: z.string().nullable(),
    usage,
  })
  .passthrough();

export const errorBodySchema = z
  .object({
    type: z.literal('error'),
    error: z
      .object({
        type: z.enum(['invalid_request_error', 'authentication_error', 'billing_error', 'permission_error', 'not_found_error', 'request_too_large', 'rate_limit_error', 'api_error', 'timeout_error', 'overloaded_error']),
        message: z.string().min(1),
      })
      .passthrough(),
    request_id: z.string().min(1).optional(),
  })
  .strict();

const delta = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text_delta'), text: z.string() }).strict(),
  z.object({ type: z.literal('thinking_delta'), thinking: z.string() }).strict(),
  z.object({ type: z.literal('signature_delta'), signature: z.string().min(1) }).strict(),
  z.object({ type: z.literal('input_json_delta'), partial_json: z.string() }).strict(),
]);

const startBlock = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.literal('') }).passthrough(),
  z.object({ type: z.literal('thinking'), thinking: z.literal(''), signature: z.literal('').optional() }).strict(),
  redactedBlock,
  z.object({ type: z.literal('tool_use'), id: z.string().min(1), name: z.string().min(1), input: z.object({}).strict() }).passthrough(),
]);

/** One stream event (the JSON of a `data:` line; its `type` equals the `event:` name). */
export const streamEventSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('message_start'),
      message: z
        .object({
          id: z.string().min(1), type: z.literal('message'), role: z.literal('assistant'), content: z.array(z.unknown()).length(0),
          model: z.string().min(1), stop_reason: z.null(), stop_sequence: z.null(), usage,
        })
        .passthrough(),
    })
    .strict(),
  z.object({ type: z.literal('content_block_start'), index: count, content_block: startBlock }).strict(),
  z.object({ type: z.literal('content_block_delta'), index: count, delta }).strict(),
  z.object({ type: z.literal('content_block_stop'), index: count }).strict(),
  z.object({ type: z.literal('message_delta'), delta: z.object({ stop_reason: stopReason, stop_sequence: z.string().nullable() }).passthrough(), usage: usage.partial({ input_tokens: true }) }).passthrough(),
  z.object({ type: z.literal('message_stop') }).strict(),
  z.object({ type: z.literal('ping') }).strict(),
  errorBodySchema.omit({ request_id: true }).extend({ request_id: z.string().optional() }),
]);

export type StreamEvent = z.infer<typeof streamEventSchema>;

/**
 * Parse an Anthropic SSE body into events, checking the framing (`event: <type>` then
 * `data: <json>` whose `type` matches), every event against {@link streamEventSchema}, and
 * the order: message_start first; blocks started, delta'd and stopped in index order, never
 * interleaved; message_delta then message_stop last (or an error event last).
 * @throws AssertionError-like Error on the first violation.
 */
export function parseAnthropicStream(text: string): StreamEvent[] {
  const events: StreamEvent[] = [];
  for (const frame of text.split('\n\n')) {
    if (frame.trim() === '') continue;
    const m = /^event: ([a-z_]+)\ndata: (.*)$/s.exec(frame);
    if (!m) throw new Error(`not an Anthropic SSE frame: ${JSON.stringify(frame.slice(0, 120))}`);
    const json = JSON.parse(m[2]!) as { type?: unknown };
    if (json.type !== m[1]) throw new Error(`event name ${m[1]} differs from data type ${String(json.type)}`);
    events.push(streamEventSchema.parse(json));
  }
  const kinds = events.filter((e) => e.type !== 'ping');
  if (kinds[0]?.type !== 'message_start') throw new Error(`first event is ${kinds[0]?.type}, not message_start`);
  let open = -1;
  let next = 0;
  for (const e of kinds.slice(1)) {
    if (e.type === 'content_block_start') {
      if (open !== -1 || e.index !== next) throw new Error(`block ${e.index} starts while ${open} is open (expected index ${next})`);
      open = e.index;
      next++;
    } else if (e.type === 'content_block_delta') {
      if (e.index !== open) throw new Error(`delta for block ${e.index} while ${open} is open`);
    } else if (e.type === 'content_block_stop') {
      if (e.index !== open) throw new Error(`stop for block ${e.index} while ${open} is open`);
      open = -1;
    }
  }
  const last = kinds.at(-1)!;
  if (last.type === 'error') return events;
  if (open !== -1) throw new Error(`block ${open} never stopped`);
  if (kinds.at(-2)?.type !== 'message_delta' || last.type !== 'message_stop') throw new Error('the stream does not end with message_delta, message_stop');
  return events;
}
