import type { FinishReason } from '../../core/chat-types.js';

/**
 * Map an OpenAI-compatible server's `finish_reason` to the OpenAI set. Servers add their own
 * values (`eos`, `end_turn`, `function_call`, `abort` …); none of them reaches the client.
 * A missing reason is `tool_calls` when the message called tools, else `stop`.
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices
 */
export function mapOpenAIFinishReason(reason: string | null | undefined, hasToolCalls: boolean): Exclude<FinishReason, 'error'> {
  switch (reason) {
    case 'stop':
    case 'eos':
    case 'end_turn':
    case 'stop_sequence':
      return hasToolCalls ? 'tool_calls' : 'stop';
    case 'length':
    case 'max_tokens':
    case 'model_length':
      return 'length';
    case 'tool_calls':
    case 'function_call':
    case 'tool_use':
      return 'tool_calls';
    case 'content_filter':
    case 'safety':
      return 'content_filter';
    default:
      return hasToolCalls ? 'tool_calls' : 'stop';
  }
}
