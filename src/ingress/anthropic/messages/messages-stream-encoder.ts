import type { ResponseIdentity, StreamEncoder } from '../../types.js';
import { anthropicErrorBody } from '../error-envelope.js';
import { ANTHROPIC_REASONING_FORMAT } from './convert-messages-to-chat.js';
import { messagesStopReason, messagesUsage } from './messages-usage.js';

/** One Anthropic SSE event: `event: <type>` and its JSON (whose `type` is the same). */
export const sseEvent = (type: string, data: unknown): string => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

/** The event sent while a stream waits for its first content (instead of an SSE comment). */
export const PING_EVENT = sseEvent('ping', { type: 'ping' });

/**
 * Messages API stream events from internal stream parts (the pipeline frames them into blocks):
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
  let open = -1;
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
        case 'block-start': {
          open = p.index;
          switch (p.block) {
            case 'text':
            case 'refusal':
              return sseEvent('content_block_start', { type: 'content_block_start', index: p.index, content_block: { type: 'text', text: '' } });
            case 'reasoning':
              return sseEvent('content_block_start', { type: 'content_block_start', index: p.index, content_block: { type: 'thinking', thinking: '', signature: '' } });
            case 'tool-call':
              return ''; // written with the tool call's start (it carries the id and name)
          }
          return '';
        }
        case 'block-end':
          return sseEvent('content_block_stop', { type: 'content_block_stop', index: p.index });
        case 'text':
        case 'refusal':
          return sseEvent('content_block_delta', { type: 'content_block_delta', index: open, delta: { type: 'text_delta', text: p.text } });
        case 'reasoning':
          return sseEvent('content_block_delta', { type: 'content_block_delta', index: open, delta: { type: 'thinking_delta', thinking: p.text } });
        case 'reasoning-details': {
          let out = '';
          for (const d of p.details) {
            if (d.signature && (d.format === undefined || d.format === ANTHROPIC_REASONING_FORMAT)) {
              out += sseEvent('content_block_delta', { type: 'content_block_delta', index: open, delta: { type: 'signature_delta', signature: d.signature } });
            }
          }
          return out;
        }
        case 'tool-call-start':
          toolBlock.set(p.index, open);
          return sseEvent('content_block_start', { type: 'content_block_start', index: open, content_block: { type: 'tool_use', id: p.id, name: p.name, input: {} } });
        case 'tool-call-delta':
          return p.argumentsDelta === ''
            ? ''
            : sseEvent('content_block_delta', { type: 'content_block_delta', index: toolBlock.get(p.index) ?? open, delta: { type: 'input_json_delta', partial_json: p.argumentsDelta } });
      }
    },
    finish: (reason, usage) =>
      sseEvent('message_delta', { type: 'message_delta', delta: { stop_reason: messagesStopReason(reason), stop_sequence: null }, usage: messagesUsage(usage) }) +
      sseEvent('message_stop', { type: 'message_stop' }),
    error: (err, requestId) => sseEvent('error', anthropicErrorBody(err, requestId)),
    done: () => '',
  };
}
