import type { ContentBlockKind } from '../../../core/stream-part.js';
import type { ResponseIdentity, StreamEncoder } from '../../types.js';
import { anthropicErrorBody } from '../error-envelope.js';
import { ANTHROPIC_REASONING_FORMAT } from './convert-messages-to-chat.js';
import { messagesStopReason, messagesUsage } from './messages-usage.js';

/** One Anthropic SSE event: `event: <type>` and its JSON (whose `type` is the same). */
export const sseEvent = (type: string, data: unknown): string => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

/** The event sent while a stream waits for its first content (instead of an SSE comment). */
export const PING_EVENT = sseEvent('ping', { type: 'ping' });

/**
 * Messages API stream events from internal stream parts (the pipeline frames them into blocks;
 * a block is announced only with its first content, so one with nothing Anthropic can carry —
 * e.g. only another vendor's reasoning signature — leaves no empty block, and indexes stay
 * dense):
 * `message_start` (usage: the gateway's input estimate, output 0), per block
 * `content_block_start` / `content_block_delta` / `content_block_stop` — text (`text_delta`),
 * reasoning as `thinking` (`thinking_delta`, and `signature_delta` for an Anthropic signature),
 * a refusal as text, tool calls as `tool_use` (`input_json_delta`) —, then `message_delta`
 * (stop_reason, cumulative usage with cache counts) and `message_stop`; a failure is
 * `event: error` with Anthropic's error envelope (the catalog's `code` inside).
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 */
export function messagesStreamEncoder(ident: ResponseIdentity): StreamEncoder {
  /** Anthropic block index of each tool call, by the internal tool-call index. */
  const toolBlock = new Map<number, number>();
  /** The framed block open now, and its Anthropic index once announced. */
  let current: { kind: ContentBlockKind; index: number | null } | null = null;
  let next = 0;
  const delta = (index: number, d: unknown) => sseEvent('content_block_delta', { type: 'content_block_delta', index, delta: d });
  /** Announce the open block (text or thinking) if not yet done; its index and the start event. */
  const open = (block: Record<string, string>): [number, string] => {
    if (current === null) current = { kind: block.type === 'thinking' ? 'reasoning' : 'text', index: null };
    if (current.index !== null) return [current.index, ''];
    current.index = next++;
    return [current.index, sseEvent('content_block_start', { type: 'content_block_start', index: current.index, content_block: block })];
  };
  const TEXT = { type: 'text', text: '' };
  const THINKING = { type: 'thinking', thinking: '', signature: '' };
  return {
    start: () =>
      sseEvent('message_start', {
        type: 'message_start',
        message: {
          id: ident.id, type: 'message', role: 'assistant', content: [], model: ident.model, stop_reason: null, stop_sequence: null,
          usage: { input_tokens: ident.promptTokens ?? 0, output_tokens: 0, cache_creation_input_tokens: null, cache_read_input_tokens: null },
        },
      }),
    part(p) {
      switch (p.type) {
        case 'block-start':
          current = { kind: p.block, index: null };
          return '';
        case 'block-end': {
          const index = current?.index ?? null;
          current = null;
          return index === null ? '' : sseEvent('content_block_stop', { type: 'content_block_stop', index });
        }
        case 'text':
        case 'refusal': {
          const [index, startEvent] = open(TEXT);
          return startEvent + delta(index, { type: 'text_delta', text: p.text });
        }
        case 'reasoning': {
          const [index, startEvent] = open(THINKING);
          return startEvent + delta(index, { type: 'thinking_delta', thinking: p.text });
        }
        case 'reasoning-details': {
          let out = '';
          for (const d of p.details) {
            if (d.type !== 'reasoning.text' || !d.signature || (d.format !== undefined && d.format !== ANTHROPIC_REASONING_FORMAT)) continue;
            const [index, startEvent] = open(THINKING);
            out += startEvent + delta(index, { type: 'signature_delta', signature: d.signature });
          }
          return out;
        }
        case 'tool-call-start': {
          const index = next++;
          current = { kind: 'tool-call', index };
          toolBlock.set(p.index, index);
          return sseEvent('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: p.id, name: p.name, input: {} } });
        }
        case 'tool-call-delta': {
          const index = toolBlock.get(p.index);
          // Arguments of a call whose block already closed cannot be sent in Anthropic's format.
          return p.argumentsDelta === '' || index === undefined || index !== current?.index ? '' : delta(index, { type: 'input_json_delta', partial_json: p.argumentsDelta });
        }
      }
    },
    finish: (reason, usage) =>
      sseEvent('message_delta', { type: 'message_delta', delta: { stop_reason: messagesStopReason(reason), stop_sequence: null }, usage: messagesUsage(usage) }) +
      sseEvent('message_stop', { type: 'message_stop' }),
    error: (err, requestId) => sseEvent('error', anthropicErrorBody(err, requestId)),
    done: () => '',
  };
}
