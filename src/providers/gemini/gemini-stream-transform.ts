import { GatewayError } from '../../errors/gateway-error.js';
import type { StreamPart } from '../../core/stream-part.js';
import type { StreamTransform } from '../types.js';
import { convertGeminiUsage } from './convert-gemini-usage.js';
import { firstCandidate, promptBlockedError } from './convert-gemini-response.js';
import { inBandGeminiError } from './gemini-error.js';
import { GeminiPartReader } from './gemini-part-reader.js';
import { mapGeminiFinishReason } from './map-gemini-finish-reason.js';
import type { GeminiResponse } from './gemini-wire-types.js';

/**
 * Converts a `streamGenerateContent?alt=sse` stream into {@link StreamPart}s. Each SSE `data:`
 * is one whole `GenerateContentResponse` (framing `\r\n\r\n`, no `[DONE]`: the end of the body
 * ends the stream).
 *
 * - Candidate 0's parts go through one {@link GeminiPartReader} for the whole stream, so tool
 *   call indexes stay dense and 0-based across chunks and calls streamed in pieces are
 *   assembled.
 * - `finishReason` may come on a chunk without parts; the last one seen is kept.
 * - `usageMetadata` carries running totals: the last chunk that reports counts wins; a chunk
 *   without counts (only `trafficType`) does not reset them. Once output has started, each new
 *   total is also passed on at once (the gateway keeps the last), so a stream that fails later
 *   is recorded with the usage seen so far.
 * - An `error` object in an event, and a blocked prompt (`promptFeedback.blockReason` with no
 *   candidate), become an `error` part: before any output the router can act on it.
 * - `flush()` returns the finish and usage parts, or an `error` part when the stream ended
 *   without any `finishReason` (it was cut).
 * @see https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
 */
export function createGeminiStreamTransform(providerId: string): StreamTransform {
  const reader = new GeminiPartReader();
  let finish: string | undefined;
  let usage: StreamPart | undefined;
  let failed = false;
  let flushed = false;
  let started = false;

  const error = (err: GatewayError): StreamPart[] => {
    failed = true;
    return [{ type: 'error', error: err }];
  };

  return {
    push({ data }) {
      if (failed || data.trim() === '') return [];
      let chunk: GeminiResponse;
      try {
        chunk = JSON.parse(data) as GeminiResponse;
      } catch {
        return error(new GatewayError('upstream_invalid_response', `${providerId}: stream event is not JSON`, { metadata: { provider: providerId } }));
      }
      if (Array.isArray(chunk)) chunk = (chunk[0] ?? {}) as GeminiResponse;
      if (chunk === null || typeof chunk !== 'object') return [];
      if (chunk.error && typeof chunk.error === 'object') return error(inBandGeminiError(providerId, chunk.error));
      const candidate = firstCandidate(chunk);
      if (!candidate) {
        const blocked = promptBlockedError(providerId, chunk);
        if (blocked) return error(blocked);
      }
      const parts: StreamPart[] = [];
      if (candidate) {
        for (const p of Array.isArray(candidate.content?.parts) ? candidate.content.parts : []) parts.push(...reader.push(p));
        if (typeof candidate.finishReason === 'string' && candidate.finishReason !== '') finish = candidate.finishReason;
      }
      if (parts.length > 0) started = true;
      const u = convertGeminiUsage(chunk.usageMetadata);
      if (u) {
        usage = { type: 'usage', usage: u };
        // Running totals go out with the output (never before it: a usage part would commit the
        // stream and end failover), so a stream cut later still has the usage seen so far.
        if (started) parts.push(usage);
      }
      return parts;
    },
    flush() {
      if (failed || flushed) return [];
      flushed = true;
      const parts = reader.finish();
      if (finish === undefined) {
        return [{ type: 'error', error: new GatewayError('upstream_connection_failed', `${providerId}: the stream ended before the generation finished`, { metadata: { provider: providerId } }) }];
      }
      parts.push({ type: 'finish', finishReason: mapGeminiFinishReason(finish, reader.toolCallCount > 0), nativeFinishReason: finish });
      if (usage) parts.push(usage);
      return parts;
    },
  };
}
