import type { FinishReason } from '../../core/chat-types.js';

/** `stop_reason` values the Messages API documents. */
export type AnthropicStopReason = 'end_turn' | 'stop_sequence' | 'pause_turn' | 'max_tokens' | 'model_context_window_exceeded' | 'tool_use' | 'refusal';

const KNOWN: ReadonlySet<string> = new Set<AnthropicStopReason>(['end_turn', 'stop_sequence', 'pause_turn', 'max_tokens', 'model_context_window_exceeded', 'tool_use', 'refusal']);

/**
 * Map Anthropic's `stop_reason` to the OpenAI set (no native value ever reaches the client):
 *
 * | stop_reason | finish_reason |
 * |---|---|
 * | end_turn, stop_sequence, pause_turn | stop |
 * | max_tokens, model_context_window_exceeded | length |
 * | tool_use | tool_calls — `stop` when the only tool used was the gateway's JSON-response tool |
 * | refusal | content_filter |
 * | null or anything else | stop |
 *
 * @param onlyJsonTool true when the response's only tool use was the internal JSON-response
 *   tool (`response_format` served through a forced tool), whose input became the content.
 * @see https://docs.anthropic.com/en/api/handling-stop-reasons
 */
export function mapAnthropicFinishReason(stopReason: string | null | undefined, onlyJsonTool: boolean): Exclude<FinishReason, 'error'> {
  if (typeof stopReason !== 'string' || !KNOWN.has(stopReason)) return 'stop';
  const reason = stopReason as AnthropicStopReason;
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
    case 'pause_turn':
      return 'stop';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return onlyJsonTool ? 'stop' : 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default: {
      const unreachable: never = reason;
      return unreachable;
    }
  }
}
