import { EMBEDDING_INPUTS } from '../../../config/schema.js';
import type { ChatRequest, Usage } from '../../../core/chat-types.js';
import type { EmbeddingRequest, EmbeddingResult } from '../../../core/embedding-types.js';
import { GatewayError } from '../../../errors/gateway-error.js';
import type { PlannedEndpoint } from '../../../routing/route-plan.js';
import type { EmbeddingIngress } from '../../types.js';
import { openAIErrorBody } from '../error-envelope.js';
import { MAX_EMBEDDING_INPUTS, parseEmbeddingRequest, type EmbeddingsApiRequest } from './embedding-request-schema.js';

/** `input` as a list: one entry per vector. */
function inputList(input: EmbeddingsApiRequest['input']): string[] | number[][] {
  if (typeof input === 'string') return [input];
  if (input.length > 0 && typeof input[0] === 'number') return [input as number[]];
  return input as string[] | number[][];
}

/**
 * The chat form routing and limits work on: the longest text input as one user message (an
 * endpoint's context length bounds each input, not the batch). Token-id inputs count as one
 * character per token for the size bounds.
 */
function toChat(req: EmbeddingsApiRequest): ChatRequest {
  let longest = '';
  for (const item of inputList(req.input)) {
    const size = typeof item === 'string' ? item.length : item.length;
    if (size > longest.length) longest = typeof item === 'string' ? item : 'x'.repeat(item.length);
  }
  const chat: ChatRequest = { model: req.model, messages: [{ role: 'user', content: longest }] };
  if (req.models) chat.models = req.models;
  if (req.provider) chat.provider = req.provider;
  if (req.op) chat.op = req.op;
  if (req.user !== undefined) chat.user = req.user;
  return chat;
}

/**
 * Only endpoints that declare `embeddings: true` serve embeddings; token-id inputs only those
 * whose kind takes them (`EMBEDDING_INPUTS`: not `gemini`, which embeds text).
 * @throws GatewayError `no_endpoint_available` (`param: model`) when none of the model's
 *   endpoints serves embeddings; `unsupported_parameter` (`param: input`) when the request has
 *   token-id inputs and every embeddings endpoint takes text only.
 */
function restrictToEmbeddingEndpoints(req: EmbeddingsApiRequest, plan: PlannedEndpoint[]): PlannedEndpoint[] {
  const serving = plan.filter((p) => p.target.endpoint.embeddings);
  if (serving.length === 0) {
    throw new GatewayError('no_endpoint_available', `no endpoint of ${JSON.stringify(req.model)} serves embeddings (endpoints declare it with embeddings: true)`, { param: 'model' });
  }
  if (!hasTokenIds(req.input)) return serving;
  const takingTokens = serving.filter((p) => EMBEDDING_INPUTS[p.target.provider.kind] === 'text-or-tokens');
  if (takingTokens.length === 0) {
    const kinds = [...new Set(serving.map((p) => p.target.provider.kind))].join(', ');
    throw new GatewayError('unsupported_parameter', `input: token-id inputs cannot be served by the embeddings endpoints of ${JSON.stringify(req.model)} (provider kind ${kinds} embeds text only); send the text`, { param: 'input' });
  }
  return takingTokens;
}

/** Whether `input` holds token ids (one array of ids, or arrays of them) rather than text. */
function hasTokenIds(input: EmbeddingsApiRequest['input']): boolean {
  return Array.isArray(input) && input.length > 0 && typeof input[0] !== 'string';
}

/**
 * The embeddings response body. `usage` has `prompt_tokens` and `total_tokens` (embeddings
 * generate no tokens), plus the gateway's `cost` in USD.
 * @see https://platform.openai.com/docs/api-reference/embeddings/object
 */
function embeddingBody(model: string, result: EmbeddingResult, usage: Usage, costUsd: number) {
  const prompt = usage.promptTokens ?? 0;
  return {
    object: 'list',
    data: result.embeddings.map((embedding, index) => ({ object: 'embedding', index, embedding })),
    model,
    usage: { prompt_tokens: prompt, total_tokens: prompt, cost: costUsd },
  };
}

/**
 * `POST /v1/embeddings` (OpenAI embeddings): routed, limited, recorded and priced like every
 * generation; served by endpoints with `embeddings: true`, in batches of their
 * `max_embedding_inputs`.
 * @see https://platform.openai.com/docs/api-reference/embeddings
 */
export const embeddingsIngress: EmbeddingIngress<EmbeddingsApiRequest> = {
  api: 'embeddings',
  path: '/v1/embeddings',
  genAiOperation: 'embeddings',
  bodyLists: { partFields: [], topParts: [], fixed: [['input', MAX_EMBEDDING_INPUTS, `at most ${MAX_EMBEDDING_INPUTS} inputs per request`]] },
  outputLimitParam: () => 'max_tokens',
  // Embeddings are routed on their longest input: a context refusal names `input`, not `messages`.
  contextMeasure: { param: 'input', subject: 'the longest input' },
  output: 'embeddings',
  parse: parseEmbeddingRequest,
  toChat,
  restrictPlan: restrictToEmbeddingEndpoints,
  toEmbeddingRequest(req): EmbeddingRequest {
    const out: EmbeddingRequest = { model: req.model, input: inputList(req.input) };
    if (req.dimensions !== undefined) out.dimensions = req.dimensions;
    if (req.encoding_format !== undefined) out.encoding_format = req.encoding_format;
    if (req.user !== undefined) out.user = req.user;
    return out;
  },
  recordedRequest: (req) => ({ input: req.input }),
  embeddingBody,
  errorBody: openAIErrorBody,
};
