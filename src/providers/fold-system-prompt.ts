import type { ChatMessage, ContentPart } from '../core/chat-types.js';
import type { ProviderTarget } from './types.js';

/** Model families known to reject a system instruction (Gemma on the Gemini API: "Developer instruction is not enabled"). */
const NO_SYSTEM_FAMILIES = [/gemma/i];

/**
 * Whether an endpoint folds system and developer messages into the first user turn: its
 * `fold_system_prompt` setting, else true when the upstream model belongs to a family known
 * to reject a system instruction (Gemma).
 */
export function foldsSystemPrompt(target: ProviderTarget): boolean {
  return target.endpoint.fold_system_prompt ?? NO_SYSTEM_FAMILIES.some((re) => re.test(target.endpoint.upstream_model));
}

const textOf = (content: string | ContentPart[]): string =>
  typeof content === 'string' ? content : content.map((p) => (p.type === 'text' ? p.text : '')).filter((t) => t !== '').join('\n\n');

/**
 * Messages without system or developer turns: their text (in order, a blank line between) is
 * put before the first user message's content (as its first text part when the content is an
 * array), or becomes a user message of its own at the start when no user message exists.
 * Returns the input array itself when there is nothing to fold.
 */
export function foldSystemIntoFirstUser(messages: ChatMessage[]): ChatMessage[] {
  const system = messages.filter((m): m is Extract<ChatMessage, { role: 'system' | 'developer' }> => m.role === 'system' || m.role === 'developer');
  if (system.length === 0) return messages;
  const text = system.map((m) => textOf(m.content)).filter((t) => t !== '').join('\n\n');
  const rest = messages.filter((m) => m.role !== 'system' && m.role !== 'developer');
  if (text === '') return rest;
  const first = rest.findIndex((m) => m.role === 'user');
  if (first === -1) return [{ role: 'user', content: text }, ...rest];
  const user = rest[first] as Extract<ChatMessage, { role: 'user' }>;
  const content: string | ContentPart[] = typeof user.content === 'string' ? `${text}\n\n${user.content}` : [{ type: 'text', text }, ...user.content];
  return rest.map((m, i) => (i === first ? { ...user, content } : m));
}
