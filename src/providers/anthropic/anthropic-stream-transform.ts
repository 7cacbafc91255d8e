import { GatewayError } from '../../errors/gateway-error.js';
import { decodeJsonStringBody, JSON_STRING_BODY } from '../json-string-body.js';
import { newToolCallId } from '../../util/ids.js';
import type { StreamPart } from '../../core/stream-part.js';
import type { StreamTransform } from '../types.js';
import { inBandAnthropicError } from './anthropic-error.js';
import { JSON_RESPONSE_TOOL_NAME } from './anthropic-json-response-tool.js';
import type { AnthropicContentBlockWire, AnthropicDeltaWire, AnthropicStreamEventWire, AnthropicUsageWire } from './anthropic-wire-types.js';
import { toolInputJson } from './convert-anthropic-response.js';
import { convertAnthropicUsage, mergeAnthropicUsage } from './convert-anthropic-usage.js';
import { ANTHROPIC_REASONING_FORMAT } from './convert-to-anthropic-messages.js';
import { mapAnthropicFinishReason } from './map-anthropic-finish-reason.js';

/** Stream event types the transform acts on; others (new ones included) are ignored. */
type EventType = 'message_start' | 'content_block_start' | 'content_block_delta' | 'content_block_stop' | 'message_delta' | 'message_stop' | 'ping' | 'error';

const EVENT_TYPES: ReadonlySet<string> = new Set<EventType>([
  'message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop', 'ping', 'error',
]);

/** Delta types the transform reads; others (`citations_delta`, `compaction_delta` …) are ignored. */
type DeltaType = 'text_delta' | 'thinking_delta' | 'signature_delta' | 'input_json_delta';

/**
 * A `content_block_delta` event with a `text_delta` and nothing else, as Anthropic writes it (no
 * whitespace, fields in this order): read by this anchored pattern instead of `JSON.parse`. Any
 * other event misses it and is parsed in full, so a match reads what `JSON.parse` would.
 */
const TEXT_DELTA = new RegExp(String.raw`^\{"type":"content_block_delta","index":(0|[1-9]\d{0,8}),"delta":\{"type":"text_delta","text":"(${JSON_STRING_BODY})"\}\}$`);

const DELTA_TYPES: ReadonlySet<string> = new Set<DeltaType>(['text_delta', 'thinking_delta', 'signature_delta', 'input_json_delta']);

/** What is known about one open content block, by Anthropic block index. */
type BlockState =
  | { kind: 'text' }
  | { kind: 'thinking'; text: string; signature: string }
  | { kind: 'redacted'; data: string }
  /** A client tool call, held until its block stops; `input` is the start block's input, `args` the streamed argument text. */
  | { kind: 'tool'; id: string; name: string; input: unknown; args: string }
  /** The gateway's JSON-response tool: its input is the answer text. */
  | { kind: 'json'; input: unknown; sawArguments: boolean }
  /** Server tools and their results, and block types this gateway does not know. */
  | { kind: 'ignored' };

/** `{}`-or-input JSON for a tool block that streamed no argument text. */
const startInputJson = (input: unknown): string =>
  input && typeof input === 'object' && !Array.isArray(input) && Object.keys(input).length === 0 ? '{}' : toolInputJson(input);

/**
 * Converts a Messages API event stream into {@link StreamPart}s:
 * - `message_start`: input and cache usage (and, rarely, complete content blocks); a second
 *   one restarts the message (some upstreams retry inside one stream): open blocks are dropped
 *   and the new message must reach its own `message_delta` / `message_stop`;
 * - `content_block_start` / `_delta` / `_stop`: `text_delta` → text, `thinking_delta` →
 *   reasoning, the signed thinking block → one reasoning-details part at its stop,
 *   `redacted_thinking` → an encrypted reasoning-details part; a `tool_use` block is held
 *   until its `content_block_stop` and then given whole: a tool-call start (dense 0-based
 *   indexes in order of completed tool_use blocks, not Anthropic's block index) and one
 *   argument delta with every `input_json_delta` joined (its start input when none, `"{}"`
 *   when empty), so a call cut by a restart or a broken stream never reaches the client with
 *   half its arguments; the JSON-response tool's input streams as text;
 *   server-tool blocks (server_tool_use, web search, code execution, MCP …) are skipped;
 * - `message_delta`: stop reason and cumulative usage (the last report wins);
 * - `ping` and unknown events: nothing; `error` → an error part (by error type).
 * `flush()` gives the finish and usage parts, or an error part when the stream ended before
 * `message_delta` / `message_stop` (a cut stream); `usage()` the counts reported so far (the
 * input counts from `message_start`, the output total of the last `message_delta`), for a
 * stream that is cancelled or cut before it finished.
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 */
export function createAnthropicStreamTransform(providerId: string): StreamTransform {
  const blocks = new Map<number, BlockState>();
  let toolCount = 0;
  let usedJsonTool = false;
  let usage: AnthropicUsageWire | undefined;
  let stopReason: string | null = null;
  let started = false;
  let ended = false;
  let closed = false;

  // Answer text of the current message, and after a restart the text already sent that the new
  // message repeats (skipped while it matches, so a replayed answer is not sent twice).
  let messageText = '';
  let replay = '';
  let replayAt = 0;
  const answerText = (text: string): StreamPart[] => {
    messageText += text;
    let skip = 0;
    while (replayAt < replay.length && skip < text.length && replay[replayAt] === text[skip]) {
      replayAt++;
      skip++;
    }
    if (skip < text.length) replay = '';
    return skip < text.length ? [{ type: 'text', text: text.slice(skip) }] : [];
  };

  const startBlock = (index: number, block: AnthropicContentBlockWire | undefined): StreamPart[] => {
    switch (block?.type) {
      case 'text':
        blocks.set(index, { kind: 'text' });
        return typeof block.text === 'string' && block.text !== '' ? answerText(block.text) : [];
      case 'thinking': {
        const text = typeof block.thinking === 'string' ? block.thinking : '';
        blocks.set(index, { kind: 'thinking', text, signature: typeof block.signature === 'string' ? block.signature : '' });
        return text !== '' ? [{ type: 'reasoning', text }] : [];
      }
      case 'redacted_thinking':
        blocks.set(index, { kind: 'redacted', data: typeof block.data === 'string' ? block.data : '' });
        return [];
      case 'tool_use': {
        if (block.name === JSON_RESPONSE_TOOL_NAME) {
          usedJsonTool = true;
          blocks.set(index, { kind: 'json', input: block.input, sawArguments: false });
          return [];
        }
        const id = typeof block.id === 'string' && block.id !== '' ? block.id : newToolCallId();
        blocks.set(index, { kind: 'tool', id, name: String(block.name ?? ''), input: block.input, args: '' });
        return [];
      }
      default:
        blocks.set(index, { kind: 'ignored' });
        return [];
    }
  };

  const blockDelta = (index: number, delta: AnthropicDeltaWire | undefined): StreamPart[] => {
    if (!delta || typeof delta.type !== 'string' || !DELTA_TYPES.has(delta.type)) return [];
    const state = blocks.get(index);
    const type = delta.type as DeltaType;
    switch (type) {
      case 'text_delta': {
        const text = typeof delta.text === 'string' ? delta.text : '';
        return text !== '' && (state === undefined || state.kind === 'text') ? answerText(text) : [];
      }
      case 'thinking_delta': {
        const text = typeof delta.thinking === 'string' ? delta.thinking : '';
        if (state?.kind !== 'thinking' || text === '') return [];
        state.text += text;
        return [{ type: 'reasoning', text }];
      }
      case 'signature_delta':
        if (state?.kind === 'thinking' && typeof delta.signature === 'string') state.signature += delta.signature;
        return [];
      case 'input_json_delta': {
        const json = typeof delta.partial_json === 'string' ? delta.partial_json : '';
        if (json === '') return [];
        if (state?.kind === 'tool') state.args += json;
        if (state?.kind !== 'json') return [];
        state.sawArguments = true;
        return answerText(json);
      }
      default: {
        const unreachable: never = type;
        return unreachable;
      }
    }
  };

  const stopBlock = (index: number): StreamPart[] => {
    const state = blocks.get(index);
    blocks.delete(index);
    switch (state?.kind) {
      case 'thinking':
        return state.signature !== ''
          ? [{ type: 'reasoning-details', details: [{ type: 'reasoning.text', text: state.text, signature: state.signature, format: ANTHROPIC_REASONING_FORMAT }] }]
          : [];
      case 'redacted':
        return state.data !== '' ? [{ type: 'reasoning-details', details: [{ type: 'reasoning.encrypted', data: state.data, format: ANTHROPIC_REASONING_FORMAT }] }] : [];
      case 'tool': {
        const dense = toolCount++;
        return [
          { type: 'tool-call-start', index: dense, id: state.id, name: state.name },
          { type: 'tool-call-delta', index: dense, argumentsDelta: state.args !== '' ? state.args : startInputJson(state.input) },
        ];
      }
      case 'json':
        return state.sawArguments ? [] : answerText(startInputJson(state.input));
      case 'text':
      case 'ignored':
      case undefined:
        return [];
    }
  };

  const handle = (ev: AnthropicStreamEventWire, type: EventType): StreamPart[] => {
    const index = typeof ev.index === 'number' ? ev.index : -1;
    switch (type) {
      case 'message_start': {
        const message = ev.message ?? {};
        if (started) {
          // The upstream restarted the message: blocks still open (a tool call cut mid-arguments)
          // are dropped, the new message's indexes start again, and it must finish on its own.
          blocks.clear();
          ended = false;
          stopReason = null;
          replay = messageText;
          replayAt = 0;
          messageText = '';
        }
        started = true;
        usage = mergeAnthropicUsage(usage, message.usage);
        if (typeof message.stop_reason === 'string') stopReason = message.stop_reason;
        // Normally empty; a message replayed whole (programmatic tool calls) carries its blocks here.
        const parts: StreamPart[] = [];
        (Array.isArray(message.content) ? message.content : []).forEach((block, i) => {
          const key = -2 - i;
          parts.push(...startBlock(key, block), ...stopBlock(key));
        });
        return parts;
      }
      case 'content_block_start':
        return startBlock(index, ev.content_block);
      case 'content_block_delta':
        return blockDelta(index, ev.delta);
      case 'content_block_stop':
        return stopBlock(index);
      case 'message_delta':
        ended = true;
        if (typeof ev.delta?.stop_reason === 'string') stopReason = ev.delta.stop_reason;
        usage = mergeAnthropicUsage(usage, ev.usage);
        return [];
      case 'message_stop':
        ended = true;
        return [];
      case 'ping':
        return [];
      case 'error':
        closed = true;
        return [{ type: 'error', error: inBandAnthropicError(providerId, ev.error) }];
      default: {
        const unreachable: never = type;
        return unreachable;
      }
    }
  };

  return {
    push({ data, event }) {
      if (closed) return [];
      // Most events are a text delta and nothing else: read without JSON.parse (same result).
      const text = TEXT_DELTA.exec(data);
      if (text !== null) return blockDelta(Number(text[1]), { type: 'text_delta', text: decodeJsonStringBody(text[2]!) });
      if (data.trim() === '') return [];
      let ev: AnthropicStreamEventWire;
      try {
        ev = JSON.parse(data) as AnthropicStreamEventWire;
      } catch {
        closed = true;
        return [{ type: 'error', error: new GatewayError('upstream_invalid_response', `${providerId}: stream event is not JSON`, { metadata: { provider: providerId } }) }];
      }
      if (ev === null || typeof ev !== 'object') return [];
      const type = typeof ev.type === 'string' ? ev.type : event;
      if (type === undefined || !EVENT_TYPES.has(type)) return [];
      return handle(ev, type as EventType);
    },
    usage() {
      return convertAnthropicUsage(usage);
    },
    flush() {
      if (closed) return [];
      closed = true;
      if (!ended) {
        return [{ type: 'error', error: new GatewayError('upstream_connection_failed', `${providerId}: the stream ended before the message finished (no message_delta or message_stop)`, { metadata: { provider: providerId } }) }];
      }
      const parts: StreamPart[] = [{ type: 'finish', finishReason: mapAnthropicFinishReason(stopReason, usedJsonTool && toolCount === 0), nativeFinishReason: stopReason }];
      const u = convertAnthropicUsage(usage);
      if (u) parts.push({ type: 'usage', usage: u });
      return parts;
    },
  };
}
