import { TOOLS_LIST } from '../../body-lists.js';
import type { GenerationIngress } from '../../types.js';
import { openAIErrorBody } from '../error-envelope.js';
import { responsesToChat, responsesTranslationWarnings } from './convert-responses-request-to-chat.js';
import { hasMcpTool } from './mcp-tool.js';
import { inputItems, prepareResponsesRequest } from './previous-response.js';
import { responseBody } from './response-object.js';
import { storedResponseShapes } from './stored-response-shapes.js';
import { parseResponsesRequest, type ResponsesRequest } from './response-request-schema.js';
import { responseStreamEncoder } from './response-stream-encoder.js';

/**
 * The headers Codex sends on every Responses request with its session's (thread's) id:
 * `session-id` in current versions (0.171: also `thread-id`, the same id), `session_id` in
 * earlier ones. The first present wins.
 */
const CODEX_SESSION_HEADERS = ['session-id', 'session_id'] as const;

/** Codex's session for a request: the first of {@link CODEX_SESSION_HEADERS} present, named by its header. */
function codexSession(headers: Readonly<Record<string, string>>): { value: string; param: string } | undefined {
  for (const name of CODEX_SESSION_HEADERS) if (headers[name] !== undefined) return { value: headers[name], param: name };
  return undefined;
}

/**
 * `POST /v1/responses` (OpenAI Responses API): translated through the internal chat request to
 * every provider kind, sent natively to `openai` endpoints with `supports_responses` (the
 * kind's native lane, providers/openai/native/responses.ts). The response `id` is the generation id; with `store` and a retention that
 * keeps text the response is kept for `GET /v1/responses/{id}` and `previous_response_id`.
 * Codex's `session-id` (older: `session_id`) header is the generation's session when
 * `op.session` is unset.
 * @see https://platform.openai.com/docs/api-reference/responses
 */
export const responsesIngress: GenerationIngress<ResponsesRequest> = {
  api: 'responses',
  path: '/v1/responses',
  routes: [
    { method: 'GET', path: '/v1/responses/:id', operation: 'get-response', access: 'key' },
    { method: 'DELETE', path: '/v1/responses/:id', operation: 'delete-response', access: 'key' },
  ],
  genAiOperation: 'chat',
  // A Codex turn resends the whole history: its items are bounded like messages, not like embeddings inputs.
  bodyLists: { items: { field: 'input', noun: 'input items' }, partFields: ['content', 'output', 'summary'], topParts: [], fixed: [TOOLS_LIST] },
  outputLimitParam: () => 'max_output_tokens',
  reasoningLimitParam: 'max_output_tokens',
  storedResponses: storedResponseShapes,
  output: 'generation',
  contentBlocks: true,
  sessionHeaders: CODEX_SESSION_HEADERS,
  clientSession: (_req, headers) => codexSession(headers),
  hostsMcpTools: hasMcpTool,
  parse: parseResponsesRequest,
  prepare: prepareResponsesRequest,
  toChat: responsesToChat,
  translationWarnings: responsesTranslationWarnings,
  recordedRequest: (req) => ({ instructions: req.instructions ?? undefined, input: req.input, previous_response_id: req.previous_response_id ?? undefined }),
  createStreamEncoder: responseStreamEncoder,
  responseBody: (ident, result, usage, costUsd, req) => responseBody(ident, req, result, usage, costUsd),
  keep: (req, response) => (req.store === true && response && typeof response === 'object' ? { response: response as Record<string, unknown>, input: inputItems(req) } : undefined),
  errorBody: openAIErrorBody,
};
