import type { FinishReason } from '../../core/chat-types.js';

/** Gemini `FinishReason` values known when this was written (js-genai `FinishReason`). */
export type GeminiFinishReason =
  | 'FINISH_REASON_UNSPECIFIED'
  | 'STOP'
  | 'MAX_TOKENS'
  | 'SAFETY'
  | 'RECITATION'
  | 'LANGUAGE'
  | 'OTHER'
  | 'BLOCKLIST'
  | 'PROHIBITED_CONTENT'
  | 'SPII'
  | 'MALFORMED_FUNCTION_CALL'
  | 'IMAGE_SAFETY'
  | 'IMAGE_PROHIBITED_CONTENT'
  | 'IMAGE_RECITATION'
  | 'IMAGE_OTHER'
  | 'NO_IMAGE'
  | 'UNEXPECTED_TOOL_CALL'
  | 'TOO_MANY_TOOL_CALLS'
  | 'MISSING_THOUGHT_SIGNATURE'
  | 'MALFORMED_RESPONSE';

/**
 * Map a Gemini candidate `finishReason` to the OpenAI set. Gemini has no tool-call reason: a
 * turn that called functions ends with `STOP`, so `hasToolCalls` turns `STOP` into
 * `tool_calls`.
 *
 * | Gemini | OpenAI |
 * |---|---|
 * | STOP | `stop`, or `tool_calls` when the candidate called functions |
 * | MAX_TOKENS | `length` |
 * | SAFETY, RECITATION, LANGUAGE, BLOCKLIST, PROHIBITED_CONTENT, SPII, IMAGE_SAFETY, IMAGE_PROHIBITED_CONTENT, IMAGE_RECITATION | `content_filter` |
 * | MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS, MISSING_THOUGHT_SIGNATURE, MALFORMED_RESPONSE, OTHER, IMAGE_OTHER, NO_IMAGE, FINISH_REASON_UNSPECIFIED, unknown, missing | `stop` (`tool_calls` when calls were made) |
 *
 * The raw value is kept as `nativeFinishReason` by the caller, so the tool-call failures stay
 * visible in the generation record.
 * @see https://ai.google.dev/api/generate-content#FinishReason
 */
export function mapGeminiFinishReason(reason: string | null | undefined, hasToolCalls: boolean): Exclude<FinishReason, 'error'> {
  const known = reason as GeminiFinishReason | null | undefined;
  switch (known) {
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'RECITATION':
    case 'LANGUAGE':
    case 'BLOCKLIST':
    case 'PROHIBITED_CONTENT':
    case 'SPII':
    case 'IMAGE_SAFETY':
    case 'IMAGE_PROHIBITED_CONTENT':
    case 'IMAGE_RECITATION':
      return 'content_filter';
    case 'STOP':
    case 'MALFORMED_FUNCTION_CALL':
    case 'UNEXPECTED_TOOL_CALL':
    case 'TOO_MANY_TOOL_CALLS':
    case 'MISSING_THOUGHT_SIGNATURE':
    case 'MALFORMED_RESPONSE':
    case 'OTHER':
    case 'IMAGE_OTHER':
    case 'NO_IMAGE':
    case 'FINISH_REASON_UNSPECIFIED':
    case null:
    case undefined:
      return hasToolCalls ? 'tool_calls' : 'stop';
    default: {
      // Exhaustive over the known values; a value added by Google later lands here at run time.
      const _newValue: never = known;
      return hasToolCalls ? 'tool_calls' : 'stop';
    }
  }
}
