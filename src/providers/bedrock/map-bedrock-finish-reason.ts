import type { FinishReason } from '../../core/chat-types.js';

/** `stopReason` values the Converse API documents. */
export type BedrockStopReason =
  | 'end_turn'
  | 'tool_use'
  | 'max_tokens'
  | 'stop_sequence'
  | 'guardrail_intervened'
  | 'content_filtered'
  | 'malformed_model_output'
  | 'malformed_tool_use'
  | 'model_context_window_exceeded';

const KNOWN: ReadonlySet<string> = new Set<BedrockStopReason>([
  'end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'guardrail_intervened', 'content_filtered', 'malformed_model_output', 'malformed_tool_use', 'model_context_window_exceeded',
]);

/**
 * Map Bedrock's `stopReason` to the OpenAI set (no native value ever reaches the client; the raw
 * one is kept as the native finish reason):
 *
 * | stopReason | finish_reason |
 * |---|---|
 * | end_turn, stop_sequence, malformed_model_output, malformed_tool_use | stop |
 * | max_tokens, model_context_window_exceeded | length |
 * | tool_use | tool_calls |
 * | guardrail_intervened, content_filtered | content_filter |
 * | null or anything else | stop |
 *
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html#API_runtime_Converse_ResponseSyntax
 */
export function mapBedrockFinishReason(stopReason: string | null | undefined): Exclude<FinishReason, 'error'> {
  if (typeof stopReason !== 'string' || !KNOWN.has(stopReason)) return 'stop';
  const reason = stopReason as BedrockStopReason;
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
    case 'malformed_model_output':
    case 'malformed_tool_use':
      return 'stop';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'guardrail_intervened':
    case 'content_filtered':
      return 'content_filter';
    default: {
      const unreachable: never = reason;
      return unreachable;
    }
  }
}
