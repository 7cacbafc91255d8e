import type { StreamPart } from '../../core/stream-part.js';
import type { StreamTransform, UpstreamOperation } from '../types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { convertOpenAIUsage } from './convert-openai-usage.js';
import { inBandOpenAIError } from './openai-error.js';
import { mapOpenAIFinishReason } from './map-openai-finish-reason.js';
import { ToolCallIndexer } from './tool-call-indexer.js';
import { readOpenAIContent } from './read-openai-content.js';
import { readPlainTextChunk } from './plain-text-chunk.js';
import type { OpenAIErrorWire, OpenAIResponseWire } from './openai-wire-types.js';

/**
 * Converts the chunks of an OpenAI-compatible stream (chat or legacy completions) into
 * {@link StreamPart}s. Reasoning comes from `reasoning_content` or `reasoning`; usage may
 * arrive on any chunk (the last one wins). `[DONE]` ends the stream: nothing after it is read
 * ({@link StreamTransform.ended}), so an upstream that starts over after it is never stitched
 * on; a chunk `id` that changes mid-stream is kept as a warning of the record. An error, in
 * whichever shape servers send it, becomes an error part (before any content the router then
 * fails over; after it the stream ends with the error chunk): a top-level `error` object, an
 * `error` inside the choice or `finish_reason: "error"` (OpenRouter), or an SSE event named
 * `error` whatever its data (JSON with or without an `error` wrapper, or plain text).
 * @see https://platform.openai.com/docs/api-reference/chat-streaming
 */
export function createOpenAIStreamTransform(providerId: string, _operation: UpstreamOperation): StreamTransform {
  const tools = new ToolCallIndexer();
  let finish: string | null | undefined;
  let finished = false;
  let produced = false;
  let usage: StreamPart | undefined;
  let done = false;
  let streamId: string | undefined;
  const warnings: string[] = [];
  /** A chunk's `id`: the first one is the stream's; a change is kept as a warning of the record. */
  const noteId = (id: string): void => {
    if (id === '') return;
    if (streamId === undefined) streamId = id;
    else if (id !== streamId && warnings.length < 8) {
      warnings.push(`the upstream stream changed its id mid-stream (${JSON.stringify(streamId.slice(0, 100))} → ${JSON.stringify(id.slice(0, 100))}): the output may join two generations`);
      streamId = id;
    }
  };

  return {
    ended: () => done,
    warnings: () => warnings,
    push({ data, event }) {
      if (done) return [];
      if (event === 'error') return [{ type: 'error', error: errorEventError(providerId, data) }];
      if (data === '[DONE]') {
        done = true;
        return [];
      }
      // Most chunks are a text delta and nothing else: read without JSON.parse (same result).
      const plain = readPlainTextChunk(data);
      if (plain !== undefined) {
        noteId(plain.id);
        if (plain.text === '') return [];
        produced = true;
        return [{ type: 'text', text: plain.text }];
      }
      if (data.trim() === '') return [];
      let chunk: OpenAIResponseWire;
      try {
        chunk = JSON.parse(data) as OpenAIResponseWire;
      } catch {
        return [{ type: 'error', error: new GatewayError('upstream_invalid_response', `${providerId}: stream event is not JSON`, { metadata: { provider: providerId } }) }];
      }
      if (chunk === null || typeof chunk !== 'object') return [];
      if (chunk.error) return [{ type: 'error', error: inBandOpenAIError(providerId, chunk.error) }];
      if (typeof chunk.id === 'string') noteId(chunk.id);
      const parts: StreamPart[] = [];
      const choice = Array.isArray(chunk.choices) ? chunk.choices.find((c) => (c.index ?? 0) === 0) : undefined;
      if (choice) {
        const delta = choice.delta ?? {};
        const content = readOpenAIContent(delta.content);
        const reasoning = (delta.reasoning_content ?? delta.reasoning ?? '') + content.reasoning;
        if (typeof reasoning === 'string' && reasoning !== '') parts.push({ type: 'reasoning', text: reasoning });
        if (content.text !== '') parts.push(choice.logprobs ? { type: 'text', text: content.text, logprobs: choice.logprobs } : { type: 'text', text: content.text });
        if (typeof choice.text === 'string' && choice.text !== '') parts.push({ type: 'text', text: choice.text });
        if (typeof delta.refusal === 'string' && delta.refusal !== '') parts.push({ type: 'refusal', text: delta.refusal });
        if (Array.isArray(delta.tool_calls)) for (const tc of delta.tool_calls) parts.push(...tools.push(tc));
        if (choice.error || choice.finish_reason === 'error') {
          parts.push({ type: 'error', error: inBandOpenAIError(providerId, choice.error ?? chunk.error ?? { message: 'the upstream ended the generation with finish_reason "error"' }) });
          return parts;
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      // Groq reports stream usage under `x_groq.usage`.
      const u = convertOpenAIUsage(chunk.usage ?? (chunk as { x_groq?: { usage?: OpenAIResponseWire['usage'] } }).x_groq?.usage);
      if (u) usage = { type: 'usage', usage: u };
      if (parts.length > 0) produced = true;
      return parts;
    },
    flush() {
      const parts: StreamPart[] = [];
      if (!finished) {
        finished = true;
        if (finish === undefined && (usage === undefined || !produced)) {
          // The stream ended with neither a finish reason nor usage (it was cut), or with only
          // usage and nothing generated: a failure, never an empty success.
          return [{ type: 'error', error: new GatewayError('upstream_connection_failed', `${providerId}: the stream ended before the generation finished`, { metadata: { provider: providerId } }) }];
        }
        parts.push({ type: 'finish', finishReason: mapOpenAIFinishReason(finish, tools.size > 0), nativeFinishReason: finish ?? null });
      }
      if (usage) parts.push(usage);
      return parts;
    },
  };
}

/** The error an SSE event named `error` carries: `{"error": {...}}`, a bare error object, or text. */
function errorEventError(providerId: string, data: string) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    parsed = data.trim() === '' ? undefined : data;
  }
  if (typeof parsed === 'string') return inBandOpenAIError(providerId, parsed);
  const obj = parsed && typeof parsed === 'object' ? (parsed as { error?: unknown }) : {};
  const inner = obj.error !== undefined && obj.error !== null ? obj.error : obj;
  if (typeof inner === 'string') return inBandOpenAIError(providerId, inner);
  const e = inner as OpenAIErrorWire;
  return inBandOpenAIError(providerId, { ...e, message: typeof e.message === 'string' && e.message !== '' ? e.message : 'the upstream sent an error event' });
}
