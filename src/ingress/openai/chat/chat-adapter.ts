import type { ChatRequest } from '../../../core/chat-types.js';
import { STOP_LIST, TOOLS_LIST } from '../../body-lists.js';
import type { GenerationIngress } from '../../types.js';
import { openAIErrorBody } from '../error-envelope.js';
import { usageToJson } from '../usage-json.js';
import { parseChatRequest } from './chat-request-schema.js';
import { chatCompletionBody } from './chat-response-body.js';
import { chatStreamEncoder } from './chat-stream-encoder.js';

/**
 * `POST /v1/chat/completions` (seed 001): the internal chat request is this API's own shape, so
 * the conversion is the identity.
 * @see https://platform.openai.com/docs/api-reference/chat
 */
export const chatIngress: GenerationIngress<ChatRequest> = {
  api: 'chat',
  path: '/v1/chat/completions',
  genAiOperation: 'chat',
  bodyLists: { items: { field: 'messages', noun: 'messages' }, partFields: ['content'], topParts: [], fixed: [TOOLS_LIST, STOP_LIST] },
  // Either field may carry the limit: the larger one is the one in force.
  outputLimitParam: (chat) => ((chat.max_completion_tokens ?? 0) >= (chat.max_tokens ?? 0) ? 'max_completion_tokens' : 'max_tokens'),
  reasoningLimitParam: 'max_completion_tokens',
  output: 'generation',
  contentBlocks: false,
  parse: parseChatRequest,
  toChat: (req) => req,
  recordedRequest: (req) => ({ messages: req.messages }),
  createStreamEncoder: chatStreamEncoder,
  responseBody: (ident, result, usage, costUsd) => chatCompletionBody(ident, result, usageToJson(usage, costUsd)),
  errorBody: openAIErrorBody,
};
