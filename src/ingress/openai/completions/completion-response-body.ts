import type { ChatResult } from '../../../core/chat-result.js';
import type { ResponseIdentity } from '../../types.js';
import type { UsageJson } from '../usage-json.js';

/**
 * The non-streamed legacy completion body.
 * @see https://platform.openai.com/docs/api-reference/completions/object
 */
export function textCompletionBody(ident: ResponseIdentity, result: ChatResult, usage: UsageJson) {
  return {
    id: ident.id,
    object: 'text_completion',
    created: ident.created,
    model: ident.model,
    choices: [{ text: result.content ?? '', index: 0, logprobs: null, finish_reason: result.finishReason === 'tool_calls' ? 'stop' : result.finishReason }],
    usage,
  };
}
