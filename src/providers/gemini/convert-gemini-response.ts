import type { ReasoningDetail, ToolCall } from '../../core/chat-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ChatResult } from '../../core/chat-result.js';
import { convertGeminiUsage } from './convert-gemini-usage.js';
import { inBandGeminiError } from './gemini-error.js';
import { GeminiPartReader } from './gemini-part-reader.js';
import { mapGeminiFinishReason } from './map-gemini-finish-reason.js';
import type { GeminiCandidate, GeminiResponse } from './gemini-wire-types.js';

/** Candidate 0 of a response (the gateway asks for one candidate). */
export function firstCandidate(res: GeminiResponse): GeminiCandidate | undefined {
  if (!Array.isArray(res.candidates)) return undefined;
  return res.candidates.find((c) => c && typeof c === 'object' && (c.index ?? 0) === 0);
}

/**
 * A prompt Gemini refused to answer: HTTP 200, no candidates, `promptFeedback.blockReason`.
 * It is `upstream_bad_request` (400, terminal): the same prompt is blocked again, so neither a
 * retry nor another Gemini endpoint helps. The block reason is in the message and in
 * `metadata.block_reason`.
 * @see https://ai.google.dev/api/generate-content#PromptFeedback
 */
export function promptBlockedError(providerId: string, res: GeminiResponse): GatewayError | undefined {
  const reason = res.promptFeedback?.blockReason;
  if (typeof reason !== 'string' || reason === '') return undefined;
  const detail = res.promptFeedback?.blockReasonMessage ? `: ${res.promptFeedback.blockReasonMessage}` : '';
  return new GatewayError('upstream_bad_request', `${providerId}: the prompt was blocked by the provider (blockReason ${reason})${detail}`, {
    status: 400,
    metadata: { provider: providerId, upstream_status: 200, block_reason: reason },
  });
}

/**
 * Convert a complete `GenerateContentResponse` into a {@link ChatResult}: candidate 0's parts
 * as read by {@link GeminiPartReader} (text, thought text as reasoning, function calls as tool
 * calls with JSON arguments, thought signatures as reasoning details), its `finishReason`
 * mapped by {@link mapGeminiFinishReason} (raw value kept), `usageMetadata` by
 * {@link convertGeminiUsage}. `content` is null when the candidate has no text.
 * @throws GatewayError for an `error` body, a blocked prompt ({@link promptBlockedError}), or
 *   a response without candidates (`upstream_invalid_response`).
 * @see https://ai.google.dev/api/generate-content#generatecontentresponse
 */
export function convertGeminiResponse(providerId: string, body: unknown): ChatResult {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError('upstream_invalid_response', `${providerId}: response is not a JSON object`, { metadata: { provider: providerId } });
  }
  const res = body as GeminiResponse;
  if (res.error && typeof res.error === 'object') throw inBandGeminiError(providerId, res.error);
  const candidate = firstCandidate(res);
  if (!candidate) {
    throw promptBlockedError(providerId, res) ?? new GatewayError('upstream_invalid_response', `${providerId}: response has no candidates`, { metadata: { provider: providerId } });
  }
  const reader = new GeminiPartReader();
  const parts = (Array.isArray(candidate.content?.parts) ? candidate.content.parts : []).flatMap((p) => reader.push(p));
  parts.push(...reader.finish());
  let content: string | null = null;
  let reasoning: string | null = null;
  const reasoningDetails: ReasoningDetail[] = [];
  const toolCalls: ToolCall[] = [];
  for (const part of parts) {
    switch (part.type) {
      case 'text':
        content = (content ?? '') + part.text;
        break;
      case 'reasoning':
        reasoning = (reasoning ?? '') + part.text;
        break;
      case 'reasoning-details':
        reasoningDetails.push(...part.details);
        break;
      case 'tool-call-start':
        toolCalls[part.index] = { id: part.id, type: 'function', function: { name: part.name, arguments: '' } };
        break;
      case 'tool-call-delta': {
        const call = toolCalls[part.index];
        if (call) call.function.arguments += part.argumentsDelta;
        break;
      }
      case 'refusal':
      case 'finish':
      case 'usage':
      case 'error':
        break;
    }
  }
  for (const call of toolCalls) if (call.function.arguments === '') call.function.arguments = '{}';
  const finish = typeof candidate.finishReason === 'string' ? candidate.finishReason : null;
  return {
    content,
    reasoning,
    reasoningDetails,
    refusal: null,
    toolCalls,
    finishReason: mapGeminiFinishReason(finish, toolCalls.length > 0),
    nativeFinishReason: finish,
    usage: convertGeminiUsage(res.usageMetadata),
  };
}
