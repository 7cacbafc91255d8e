import type { ChatResult } from '../../../core/chat-result.js';
import type { FinishReason, ReasoningDetail, Usage } from '../../../core/chat-types.js';
import { GEMINI_REASONING_FORMAT } from '../../../providers/gemini/gemini-part-reader.js';
import type { GeminiPart, GeminiUsageMetadata } from '../../../providers/gemini/gemini-wire-types.js';
import type { ResponseIdentity } from '../../types.js';

/**
 * Finish reason → Gemini's `finishReason`: stop and tool_calls → STOP (Gemini ends a function
 * call with STOP), length → MAX_TOKENS, content_filter → SAFETY.
 * @see https://ai.google.dev/api/generate-content#FinishReason
 */
export function geminiFinishReason(reason: Exclude<FinishReason, 'error'>): string {
  switch (reason) {
    case 'stop':
    case 'tool_calls':
      return 'STOP';
    case 'length':
      return 'MAX_TOKENS';
    case 'content_filter':
      return 'SAFETY';
  }
}

/**
 * The gateway's {@link Usage} as Gemini's `usageMetadata` (tokens): `promptTokenCount` includes
 * cached tokens (`cachedContentTokenCount`), `candidatesTokenCount` excludes the thoughts
 * (`thoughtsTokenCount`), `totalTokenCount` is both; counts not reported are left out, as
 * proto3 JSON leaves out zero values.
 * @see https://ai.google.dev/api/generate-content#UsageMetadata
 */
export function geminiUsageMetadata(usage: Usage | null): GeminiUsageMetadata {
  const prompt = usage?.promptTokens ?? 0;
  const completion = usage?.completionTokens ?? 0;
  const thoughts = usage?.reasoningTokens ?? 0;
  const meta: GeminiUsageMetadata = { promptTokenCount: prompt, candidatesTokenCount: Math.max(0, completion - thoughts), totalTokenCount: prompt + completion };
  if (thoughts > 0) meta.thoughtsTokenCount = thoughts;
  if (usage?.cachedTokens) meta.cachedContentTokenCount = usage.cachedTokens;
  return meta;
}

/** A tool call's arguments as the object Gemini's `functionCall.args` holds (`{}` when not an object). */
export function functionArgs(args: string): Record<string, unknown> {
  try {
    const v = JSON.parse(args === '' ? '{}' : args) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return {};
  }
}

/** Gemini thought signatures among reasoning details (another vendor's state cannot go into a Gemini part). */
export const geminiSignatures = (details: readonly ReasoningDetail[] | undefined): ReasoningDetail[] =>
  (details ?? []).filter((d) => d.type === 'reasoning.encrypted' && d.format === GEMINI_REASONING_FORMAT && typeof d.data === 'string' && d.data !== '');

/** One `GenerateContentResponse` of candidate 0 (a complete answer, or one stream chunk). */
export function geminiResponse(ident: ResponseIdentity, parts: GeminiPart[], finishReason: string | undefined, usage: GeminiUsageMetadata | undefined): Record<string, unknown> {
  const candidate: Record<string, unknown> = { content: { role: 'model', parts }, index: 0 };
  if (finishReason !== undefined) candidate.finishReason = finishReason;
  const res: Record<string, unknown> = { candidates: [candidate] };
  if (usage) res.usageMetadata = usage;
  res.modelVersion = ident.model;
  res.responseId = ident.id;
  return res;
}

/**
 * The non-streamed `GenerateContentResponse` of a translated result: candidate 0 with thought
 * text (`thought: true`), the answer text, function calls (`id` = the tool call id, so the
 * client's `functionResponse.id` pairs it), Gemini thought signatures back on the part they rode
 * on (a function call by id, else the last text part); `finishReason`, `usageMetadata`,
 * `modelVersion` (the catalog model) and `responseId` (the generation id).
 * @see https://ai.google.dev/api/generate-content#generatecontentresponse
 */
export function geminiResponseBody(ident: ResponseIdentity, result: ChatResult, usage: Usage) {
  const parts: GeminiPart[] = [];
  const signatures = geminiSignatures(result.reasoningDetails);
  if (result.reasoning) parts.push({ text: result.reasoning, thought: true });
  const text = (result.content ?? '') + (result.refusal ?? '');
  if (text !== '') parts.push({ text });
  for (const call of result.toolCalls) {
    const p: GeminiPart = { functionCall: { id: call.id, name: call.function.name, args: functionArgs(call.function.arguments) } };
    const sig = signatures.find((d) => d.id === call.id);
    if (sig) p.thoughtSignature = sig.data!;
    parts.push(p);
  }
  const loose = signatures.find((d) => d.id === undefined);
  if (loose) {
    const last = parts.findLast((p) => p.text !== undefined && p.thought !== true);
    if (last) last.thoughtSignature = loose.data!;
    else parts.push({ text: '', thoughtSignature: loose.data! });
  }
  if (parts.length === 0) parts.push({ text: '' });
  return geminiResponse(ident, parts, geminiFinishReason(result.finishReason), geminiUsageMetadata(usage));
}
