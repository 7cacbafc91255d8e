import type { FinishReason, Usage } from '../../../core/chat-types.js';
import { uncachedPromptTokens } from '../../../core/usage-arithmetic.js';

/** Anthropic's `usage` object (tokens). */
export interface MessagesUsageJson {
  /** Uncached input tokens only (Anthropic's convention). */
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number | null;
  cache_read_input_tokens: number | null;
}

/**
 * The gateway's {@link Usage} as Anthropic's `usage`: `input_tokens` excludes cache reads and
 * writes (the internal `promptTokens` includes them); cache counts not reported stay `null`;
 * counts not reported at all are 0 (Anthropic's fields are required numbers).
 * @see https://docs.anthropic.com/en/api/messages#response-usage
 */
export function messagesUsage(usage: Usage | null): MessagesUsageJson {
  const read = usage?.cachedTokens ?? null;
  const write = usage?.cacheWriteTokens ?? null;
  return {
    input_tokens: uncachedPromptTokens(usage),
    output_tokens: usage?.completionTokens ?? 0,
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read,
  };
}

/** Anthropic's stop reasons for the gateway's finish reasons. */
export type MessagesStopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'refusal';

/**
 * Finish reason → `stop_reason`: stop → end_turn, length → max_tokens, tool_calls → tool_use,
 * content_filter → refusal. (A matched stop sequence is reported as end_turn: the internal
 * format does not say which sequence matched.)
 * @see https://docs.anthropic.com/en/api/handling-stop-reasons
 */
export function messagesStopReason(reason: Exclude<FinishReason, 'error'>): MessagesStopReason {
  switch (reason) {
    case 'stop':
      return 'end_turn';
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
  }
}
