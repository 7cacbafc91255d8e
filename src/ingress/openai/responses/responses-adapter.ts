import type { GenerationIngress } from '../../types.js';
import { openAIErrorBody } from '../error-envelope.js';
import { responsesToChat, responsesTranslationWarnings } from './convert-response-to-chat.js';
import { inputItems, prepareResponsesRequest } from './previous-response.js';
import { responseBody } from './response-object.js';
import { parseResponsesRequest, type ResponsesRequest } from './response-request-schema.js';
import { responseStreamEncoder } from './response-stream-encoder.js';

/** The header Codex sends on every Responses request with its conversation's id. */
const CODEX_SESSION_HEADER = 'session_id';

/**
 * `POST /v1/responses` (OpenAI Responses API): translated through the internal chat request to
 * every provider kind, sent natively to `openai` endpoints with `supports_responses` (see
 * pipeline/lane.ts). The response `id` is the generation id; with `store` and a retention that
 * keeps text the response is kept for `GET /v1/responses/{id}` and `previous_response_id`.
 * Codex's `session_id` header is the generation's session when `op.session` is unset.
 * @see https://platform.openai.com/docs/api-reference/responses
 */
export const responsesIngress: GenerationIngress<ResponsesRequest> = {
  api: 'responses',
  path: '/v1/responses',
  output: 'generation',
  contentBlocks: true,
  sessionHeaders: [CODEX_SESSION_HEADER],
  clientSession: (_req, headers) => (headers[CODEX_SESSION_HEADER] !== undefined ? { value: headers[CODEX_SESSION_HEADER], param: CODEX_SESSION_HEADER } : undefined),
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
