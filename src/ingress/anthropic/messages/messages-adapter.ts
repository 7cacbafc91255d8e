import { FORWARDED_HEADERS } from '../../../providers/anthropic/native/messages.js';
import { TOOLS_LIST } from '../../body-lists.js';
import type { GenerationIngress } from '../../types.js';
import { anthropicModelListShape } from '../models/anthropic-model-list.js';
import { anthropicErrorBody } from '../error-envelope.js';
import { CLAUDE_CODE_SESSION_HEADER, claudeCodeSession } from './claude-code-session.js';
import { convertMessagesToChat } from './convert-messages-to-chat.js';
import { parseMessagesRequest, type MessagesRequest } from './messages-request-schema.js';
import { messagesResponseBody } from './messages-response-body.js';
import { messagesStreamEncoder, PING_EVENT } from './messages-stream-encoder.js';
import { eventsFromMessage, messageFromEvents } from './relayed-message.js';

/** Losses of each request's translation, kept until its attempts are built. */
const translationLosses = new WeakMap<MessagesRequest, string[]>();

/**
 * `POST /v1/messages` (Anthropic's Messages API; `?beta=true` too: routes ignore the query).
 * To `anthropic` endpoints the client's body goes through natively (providers/anthropic/native/messages.ts, chosen by pipeline/attempt/lane.ts); to
 * every other kind it is translated through the internal request, the losses listed as
 * warnings in the generation record. Claude Code's session (its `x-claude-code-session-id`
 * header, else `metadata.user_id`) is the generation's session when `op.session` is unset.
 * @see https://docs.anthropic.com/en/api/messages
 */
export const messagesIngress: GenerationIngress<MessagesRequest> = {
  api: 'messages',
  path: '/v1/messages',
  // `count_tokens` reads the same body and headers (pipeline/stages/count-tokens.ts).
  routes: [{ method: 'POST', path: '/v1/messages/count_tokens', operation: 'count-tokens', access: 'key' }],
  // The Message Batches API (server/routes/message-batches.ts) answers errors in this envelope.
  pathPrefixes: ['/v1/messages/batches'],
  genAiOperation: 'chat',
  // `count_tokens` is a Messages body too.
  bodyLists: { items: { field: 'messages', noun: 'messages' }, partFields: ['content'], nestedParts: 'content', topParts: ['system'], fixed: [TOOLS_LIST] },
  outputLimitParam: () => 'max_tokens',
  reasoningLimitParam: 'max_completion_tokens',
  modelList: anthropicModelListShape,
  output: 'generation',
  contentBlocks: true,
  keepAlive: PING_EVENT,
  forwardHeaders: FORWARDED_HEADERS,
  sessionHeaders: [CLAUDE_CODE_SESSION_HEADER],
  clientSession: claudeCodeSession,
  parse: parseMessagesRequest,
  toChat(req) {
    const { chat, warnings } = convertMessagesToChat(req);
    translationLosses.set(req, warnings);
    return chat;
  },
  translationWarnings: (req) => translationLosses.get(req) ?? [],
  relayedForms: { body: messageFromEvents, events: (body) => eventsFromMessage(body as Record<string, unknown>) },
  recordedRequest: (req) => ({ system: req.system, messages: req.messages }),
  createStreamEncoder: messagesStreamEncoder,
  responseBody: (ident, result, usage) => messagesResponseBody(ident, result, usage),
  errorBody: anthropicErrorBody,
  // invalid_request_error, not not_found_error: the model exists, the request asked too much.
  unservableStatus: 400,
};
