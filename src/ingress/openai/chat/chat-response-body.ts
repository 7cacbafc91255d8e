import type { ChatResult } from '../../../core/chat-result.js';
import type { ResponseIdentity } from '../../types.js';
import type { UsageJson } from '../usage-json.js';

/**
 * The non-streamed chat completion body (SPEC §2.2).
 * @see https://platform.openai.com/docs/api-reference/chat/object
 */
export function chatCompletionBody(ident: ResponseIdentity, result: ChatResult, usage: UsageJson) {
  const message: Record<string, unknown> = { role: 'assistant', content: result.content, refusal: result.refusal };
  if (result.toolCalls.length > 0) message.tool_calls = result.toolCalls;
  if (result.reasoning !== null) message.reasoning = result.reasoning;
  if (result.reasoningDetails?.length) message.reasoning_details = result.reasoningDetails;
  const body: Record<string, unknown> = {
    id: ident.id,
    object: 'chat.completion',
    created: ident.created,
    model: ident.model,
    choices: [{ index: 0, message, logprobs: result.logprobs ?? null, finish_reason: result.finishReason }],
    usage,
  };
  // OpenRouter's ChatResult requires the member; OpenAI's schema types it as a string: "" when the upstream sent none.
  body.system_fingerprint = result.systemFingerprint ?? '';
  return body;
}
