import type { StreamPart } from '../../core/stream-part.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { newToolCallId } from '../../util/ids.js';
import type { StreamTransform } from '../types.js';
import { createAnthropicStreamTransform } from '../anthropic/anthropic-stream-transform.js';
import { inStreamBedrockError } from './bedrock-error.js';
import type { BedrockStreamEventWire, BedrockUsageWire } from './bedrock-wire-types.js';
import { bedrockResultMetadata } from './convert-bedrock-response.js';
import { convertBedrockUsage } from './convert-bedrock-usage.js';
import { BEDROCK_REASONING_FORMAT } from './convert-to-bedrock-request.js';
import { mapBedrockFinishReason } from './map-bedrock-finish-reason.js';

/** ConverseStream event types the transform acts on; others (new ones included) are ignored. */
type EventType = 'messageStart' | 'contentBlockStart' | 'contentBlockDelta' | 'contentBlockStop' | 'messageStop' | 'metadata';

const EVENT_TYPES: ReadonlySet<string> = new Set<EventType>(['messageStart', 'contentBlockStart', 'contentBlockDelta', 'contentBlockStop', 'messageStop', 'metadata']);

/** An exception frame's `:exception-type` (`throttlingException`, `modelStreamErrorException`, `validationException` …). */
const EXCEPTION = /Exception$/;

/** What is known about one open content block, by `contentBlockIndex` (which counts every block kind). */
type BlockState =
  | { kind: 'tool'; id: string; name: string; args: string }
  | { kind: 'reasoning'; text: string; signature: string; redacted: string }
  | { kind: 'other' };

/**
 * Converts ConverseStream events (decoded from the binary event stream by the attempt's
 * `AwsEventStreamReader`: `event` = the `:event-type`, `data` = the member's JSON; the wrapped
 * `{"<type>": {...}}` form of recordings is read too) into {@link StreamPart}s:
 * - `contentBlockDelta`: `text` → text; `reasoningContent.text` → reasoning, its `signature`
 *   and `redactedContent` deltas joined into one reasoning-details part at the block's stop;
 *   `toolUse.input` joined until `contentBlockStop`, then the call given whole: a tool-call start
 *   (dense 0-based indexes in order of completed tool blocks, not `contentBlockIndex`) and one
 *   argument delta (`"{}"` for a call that streamed no input), so a cut stream never hands the
 *   client half a call;
 * - `contentBlockStart` with `start.toolUse`: the call's id and name (server tools skipped);
 * - `messageStop`: the stop reason; `metadata`: usage (`metrics.latencyMs` for the record),
 *   which real streams send after `messageStop`, so the finish is given at the end of the stream;
 * - an exception frame → an error part mapped as the HTTP exception would be (bedrock-error.ts):
 *   before any content the attempt fails over, after it the client's stream ends with the error.
 * `flush()` gives the finish and usage parts, or an error part when the stream ended before
 * `messageStop` (a cut stream).
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html
 */
export function createConverseStreamTransform(providerId: string): StreamTransform {
  const blocks = new Map<number, BlockState>();
  let toolCount = 0;
  let usage: BedrockUsageWire | undefined;
  let metrics: unknown;
  let stopReason: string | null = null;
  let stopped = false;
  let closed = false;

  const stopBlock = (index: number): StreamPart[] => {
    const state = blocks.get(index);
    blocks.delete(index);
    switch (state?.kind) {
      case 'tool': {
        const dense = toolCount++;
        return [
          { type: 'tool-call-start', index: dense, id: state.id, name: state.name },
          { type: 'tool-call-delta', index: dense, argumentsDelta: state.args.trim() !== '' ? state.args : '{}' },
        ];
      }
      case 'reasoning':
        if (state.signature !== '') return [{ type: 'reasoning-details', details: [{ type: 'reasoning.text', text: state.text, signature: state.signature, format: BEDROCK_REASONING_FORMAT }] }];
        if (state.redacted !== '') return [{ type: 'reasoning-details', details: [{ type: 'reasoning.encrypted', data: state.redacted, format: BEDROCK_REASONING_FORMAT }] }];
        return [];
      case 'other':
      case undefined:
        return [];
    }
  };

  const handle = (ev: BedrockStreamEventWire, type: EventType): StreamPart[] => {
    const index = typeof ev.contentBlockIndex === 'number' ? ev.contentBlockIndex : -1;
    switch (type) {
      case 'messageStart':
        return [];
      case 'contentBlockStart': {
        const tool = ev.start?.toolUse;
        if (tool && typeof tool === 'object') {
          if (tool.type === 'server_tool_use') blocks.set(index, { kind: 'other' });
          else blocks.set(index, { kind: 'tool', id: typeof tool.toolUseId === 'string' && tool.toolUseId !== '' ? tool.toolUseId : newToolCallId(), name: String(tool.name ?? ''), args: '' });
        }
        return [];
      }
      case 'contentBlockDelta': {
        const delta = ev.delta;
        if (!delta || typeof delta !== 'object') return [];
        const state = blocks.get(index);
        if (typeof delta.text === 'string') return delta.text !== '' && state === undefined ? [{ type: 'text', text: delta.text }] : [];
        if (delta.toolUse && typeof delta.toolUse === 'object') {
          if (state?.kind === 'tool' && typeof delta.toolUse.input === 'string') state.args += delta.toolUse.input;
          return [];
        }
        const r = delta.reasoningContent;
        if (r && typeof r === 'object') {
          let reasoning = state;
          if (reasoning === undefined) {
            reasoning = { kind: 'reasoning', text: '', signature: '', redacted: '' };
            blocks.set(index, reasoning);
          }
          if (reasoning.kind !== 'reasoning') return [];
          if (typeof r.signature === 'string') reasoning.signature += r.signature;
          if (typeof r.redactedContent === 'string') reasoning.redacted += r.redactedContent;
          if (typeof r.text === 'string' && r.text !== '') {
            reasoning.text += r.text;
            return [{ type: 'reasoning', text: r.text }];
          }
        }
        return [];
      }
      case 'contentBlockStop':
        return stopBlock(index);
      case 'messageStop': {
        stopped = true;
        if (typeof ev.stopReason === 'string') stopReason = ev.stopReason;
        // Blocks never stopped (none in practice) are finished here, not lost.
        const parts: StreamPart[] = [];
        for (const key of [...blocks.keys()]) parts.push(...stopBlock(key));
        return parts;
      }
      case 'metadata':
        if (ev.usage && typeof ev.usage === 'object') usage = ev.usage;
        if (ev.metrics !== undefined) metrics = ev.metrics;
        return [];
      default: {
        const unreachable: never = type;
        return unreachable;
      }
    }
  };

  return {
    push({ data, event }) {
      if (closed || data.trim() === '') return [];
      let parsed: unknown;
      try {
        parsed = JSON.parse(data);
      } catch {
        closed = true;
        return [{ type: 'error', error: new GatewayError('upstream_invalid_response', `${providerId}: stream event is not JSON`, { metadata: { provider: providerId } }) }];
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return [];
      let type = event;
      let ev = parsed as BedrockStreamEventWire;
      if (type === undefined) {
        // The wrapped form `{"contentBlockDelta": {...}}` (recordings, the SDK's output shape).
        const keys = Object.keys(ev).filter((k) => k !== 'p');
        if (keys.length !== 1) return [];
        type = keys[0]!;
        ev = (ev as Record<string, unknown>)[type] as BedrockStreamEventWire;
        if (ev === null || typeof ev !== 'object') return [];
      }
      if (EXCEPTION.test(type) || type === 'error') {
        closed = true;
        const name = type === 'error' ? (typeof ev.code === 'string' ? ev.code : 'InternalServerException') : type;
        return [{ type: 'error', error: inStreamBedrockError(providerId, name, ev) }];
      }
      if (!EVENT_TYPES.has(type)) return [];
      return handle(ev, type as EventType);
    },
    usage() {
      return convertBedrockUsage(usage);
    },
    providerMetadata() {
      return bedrockResultMetadata({ metrics, stopReason });
    },
    flush() {
      if (closed) return [];
      closed = true;
      if (!stopped) {
        return [{ type: 'error', error: new GatewayError('upstream_connection_failed', `${providerId}: the stream ended before the message finished (no messageStop)`, { metadata: { provider: providerId } }) }];
      }
      const parts: StreamPart[] = [{ type: 'finish', finishReason: mapBedrockFinishReason(stopReason), nativeFinishReason: stopReason }];
      const u = convertBedrockUsage(usage);
      if (u) parts.push({ type: 'usage', usage: u });
      return parts;
    },
  };
}

/** The Anthropic event inside one InvokeModelWithResponseStream `chunk` (`{"bytes": <base64 of the event JSON>, "p": …}`), or null when it holds none. */
export function decodeInvokeChunk(data: string): { event: string | undefined; data: string } | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return null;
  }
  const bytes = (parsed as { bytes?: unknown } | null)?.bytes;
  if (typeof bytes !== 'string') return null;
  const json = Buffer.from(bytes, 'base64').toString('utf8');
  let type: unknown;
  try {
    type = (JSON.parse(json) as { type?: unknown } | null)?.type;
  } catch {
    return { event: undefined, data: json };
  }
  return { event: typeof type === 'string' ? type : undefined, data: json };
}

/**
 * The stream transform of a Bedrock stream, whichever operation answered: ConverseStream events
 * ({@link createConverseStreamTransform}), or InvokeModelWithResponseStream's `chunk` events (the
 * Messages pass-through lane to Claude), whose base64 `bytes` are decoded to the Anthropic event
 * they carry and read by the anthropic kind's transform; `relayAs` gives that decoded event
 * (named by its `type`) for the lane to relay as Anthropic SSE. The adapter's parsers see no
 * lane, so the events say which: the first `chunk` switches to the Anthropic reading. Exception
 * frames are read the same way in both (error parts mapped by bedrock-error.ts).
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html
 */
export function createBedrockStreamTransform(providerId: string): StreamTransform {
  const converse = createConverseStreamTransform(providerId);
  let anthropic: StreamTransform | undefined;
  // relayAs and push see the same event: decode it once.
  let lastRaw: string | undefined;
  let lastDecoded: { event: string | undefined; data: string } | null = null;
  const decoded = (data: string) => {
    if (data !== lastRaw) {
      lastRaw = data;
      lastDecoded = decodeInvokeChunk(data);
    }
    return lastDecoded;
  };
  return {
    push(event) {
      if (event.event === 'chunk') {
        anthropic ??= createAnthropicStreamTransform(providerId);
        const inner = decoded(event.data);
        return inner ? anthropic.push(inner) : [];
      }
      return converse.push(event);
    },
    relayAs(event) {
      if (event.event !== 'chunk') {
        // An exception frame: Anthropic's error event shape (the relay ends with the API's own error event anyway).
        return event;
      }
      return decoded(event.data) ?? event;
    },
    flush: () => (anthropic ? anthropic.flush() : converse.flush()),
    usage: () => (anthropic ? (anthropic.usage?.() ?? null) : (converse.usage?.() ?? null)),
    providerMetadata: () => (anthropic ? null : (converse.providerMetadata?.() ?? null)),
  };
}
