import type { ChatResult } from '../../../core/chat-result.js';
import type { Usage } from '../../../core/chat-types.js';
import type { ResponseIdentity } from '../../types.js';
import { ANTHROPIC_REASONING_FORMAT } from './convert-messages-to-chat.js';
import { messagesStopReason, messagesUsage } from './messages-usage.js';

/** Tool input as an object: the arguments' JSON, or `{}` when they are not a JSON object. */
function toolInput(args: string): Record<string, unknown> {
  try {
    const v = JSON.parse(args === '' ? '{}' : args) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return {};
  }
}

/**
 * The non-streamed Messages API response for a translated result: content blocks in Anthropic's
 * order (thinking — signed when the upstream signed it —, redacted thinking, text, tool_use),
 * `stop_reason`, and usage with cache counts.
 * @see https://docs.anthropic.com/en/api/messages#response
 */
export function messagesResponseBody(ident: ResponseIdentity, result: ChatResult, usage: Usage) {
  const content: Array<Record<string, unknown>> = [];
  const details = result.reasoningDetails ?? [];
  const signed = details.filter((d) => d.type === 'reasoning.text' && d.signature && (d.format === undefined || d.format === ANTHROPIC_REASONING_FORMAT));
  if (signed.length) for (const d of signed) content.push({ type: 'thinking', thinking: d.text ?? '', signature: d.signature });
  else if (result.reasoning) content.push({ type: 'thinking', thinking: result.reasoning, signature: '' });
  for (const d of details) if (d.type === 'reasoning.encrypted' && d.format === ANTHROPIC_REASONING_FORMAT && d.data) content.push({ type: 'redacted_thinking', data: d.data });
  const text = (result.content ?? '') + (result.refusal ?? '');
  if (text !== '') content.push({ type: 'text', text });
  for (const call of result.toolCalls) content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolInput(call.function.arguments) });
  return {
    id: ident.id,
    type: 'message',
    role: 'assistant',
    model: ident.model,
    content,
    stop_reason: messagesStopReason(result.finishReason),
    stop_sequence: null,
    usage: messagesUsage(usage),
  };
}
