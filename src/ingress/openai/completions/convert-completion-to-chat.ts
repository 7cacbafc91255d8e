import type { ChatRequest, CompletionRequest } from '../../../core/chat-types.js';

/** Fields a legacy completion shares with a chat request, copied as they are. */
const SHARED_FIELDS = ['stream', 'max_tokens', 'temperature', 'top_p', 'stop', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'seed', 'user', 'models', 'provider', 'op'] as const;

/** A legacy completion as a chat request: the prompt becomes one user message. */
export function completionToChat(req: CompletionRequest): ChatRequest {
  const prompt = Array.isArray(req.prompt) ? req.prompt.join('') : req.prompt;
  const chat: ChatRequest = { model: req.model, messages: [{ role: 'user', content: prompt }] };
  for (const k of SHARED_FIELDS) {
    if (req[k] !== undefined && req[k] !== null) (chat as unknown as Record<string, unknown>)[k] = req[k];
  }
  return chat;
}
