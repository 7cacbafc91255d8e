import { z } from 'zod';
import type { ChatRequest } from '../../../core/chat-types.js';
import type { EmbeddingRequest } from '../../../core/embedding-types.js';
import { GatewayError } from '../../../errors/gateway-error.js';
import type { PlannedEndpoint } from '../../../routing/route-plan.js';
import { gatewayFields } from '../../gateway-fields.js';
import type { EmbeddingIngress } from '../../types.js';
import { firstIssueError, requireObject } from '../../validate.js';
import { geminiErrorBody } from '../error-envelope.js';
import { geminiActionRoutes } from './gemini-adapter.js';

/** Most texts one `batchEmbedContents` request may hold (Gemini's own limit). */
export const MAX_GEMINI_EMBED_REQUESTS = 250;

const text = z.object({ parts: z.array(z.object({ text: z.string() }).passthrough()).min(1, 'at least one text part is required') }).passthrough();
const embedContent = z
  .object({
    model: z.string().optional(),
    content: text,
    taskType: z.string().optional(),
    title: z.string().optional(),
    outputDimensionality: z.number().int().min(1).max(65_536).optional(),
  })
  .passthrough();

const schema = z
  .object({
    model: z.string().min(1, 'the model in the URL is empty'),
    action: z.enum(['embedContent', 'batchEmbedContents']),
    requests: z.array(embedContent).min(1, 'at least one request is required').max(MAX_GEMINI_EMBED_REQUESTS, `at most ${MAX_GEMINI_EMBED_REQUESTS} requests are allowed`),
    ...gatewayFields,
  })
  .passthrough();

/** A validated `embedContent` or `batchEmbedContents` request, as one list of requests. */
export type GeminiEmbedRequest = z.infer<typeof schema>;

/**
 * The body the pipeline receives: `batchEmbedContents` as sent, `embedContent` as a list of
 * one request; the URL's model (`models/` off) and the action in it.
 */
function embedRequestFromUrl(body: unknown, url: { resource: string; action: string }): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const b = body as Record<string, unknown>;
  if (url.action === 'batchEmbedContents') return { ...b, model: url.resource, action: url.action };
  const { models, provider, op, ...one } = b;
  return { model: url.resource, action: url.action, requests: [one], models, provider, op };
}

/**
 * Validate an embeddings request: text parts only, one `outputDimensionality` for every text
 * of a batch (the internal request carries one).
 * @throws GatewayError `invalid_request` with `param` (`requests[i].…`; `content.…` for `embedContent`).
 */
function parseGeminiEmbedRequest(body: unknown): GeminiEmbedRequest {
  const result = schema.safeParse(requireObject(body));
  if (!result.success) {
    const err = firstIssueError(result.error.issues);
    if ((body as { action?: unknown }).action === 'embedContent' && err.param?.startsWith('requests[0].')) {
      const param = err.param.slice('requests[0].'.length);
      throw new GatewayError('invalid_request', err.message.replace(/^requests\[0\]\./, ''), { param });
    }
    throw err;
  }
  const dims = new Set(result.data.requests.map((r) => r.outputDimensionality));
  if (dims.size > 1) throw new GatewayError('invalid_request', 'requests: every request of a batch must ask for the same outputDimensionality', { param: 'requests' });
  return result.data;
}

const textOf = (r: GeminiEmbedRequest['requests'][number]): string => r.content.parts.map((p) => p.text).join('\n');

/** Only endpoints that declare `embeddings: true` serve embeddings. */
function restrictToEmbeddingEndpoints(req: GeminiEmbedRequest, plan: PlannedEndpoint[]): PlannedEndpoint[] {
  const serving = plan.filter((p) => p.target.endpoint.embeddings);
  if (serving.length === 0) throw new GatewayError('no_endpoint_available', `no endpoint of ${JSON.stringify(req.model)} serves embeddings (endpoints declare it with embeddings: true)`, { param: 'model' });
  return serving;
}

/**
 * The Gemini API's embeddings (`POST /v1beta/models/{model}:embedContent` and
 * `:batchEmbedContents`; `@google/genai`'s `embedContent()` calls the batch method), routed,
 * limited, recorded and priced like `/v1/embeddings`, to any kind with embeddings endpoints.
 * `taskType` and `title` have no internal equivalent and are not sent on.
 * @see https://ai.google.dev/api/embeddings
 */
export const geminiEmbeddingsIngress: EmbeddingIngress<GeminiEmbedRequest> = {
  api: 'gemini-embeddings',
  path: '/v1beta/embedContent',
  routes: [...geminiActionRoutes('embedContent', 'generate'), ...geminiActionRoutes('batchEmbedContents', 'generate')].map((r) => ({ ...r, requestBody: embedRequestFromUrl })),
  genAiOperation: 'embeddings',
  bodyLists: { partFields: [], topParts: [], fixed: [] },
  outputLimitParam: () => 'generationConfig.maxOutputTokens',
  contextMeasure: { param: 'requests', subject: 'the longest text' },
  output: 'embeddings',
  parse: parseGeminiEmbedRequest,
  toChat(req): ChatRequest {
    let longest = '';
    for (const r of req.requests) {
      const t = textOf(r);
      if (t.length > longest.length) longest = t;
    }
    const chat: ChatRequest = { model: req.model, messages: [{ role: 'user', content: longest }] };
    if (req.models) chat.models = req.models;
    if (req.provider) chat.provider = req.provider;
    if (req.op) chat.op = req.op;
    return chat;
  },
  restrictPlan: restrictToEmbeddingEndpoints,
  toEmbeddingRequest(req): EmbeddingRequest {
    const out: EmbeddingRequest = { model: req.model, input: req.requests.map(textOf) };
    const dims = req.requests[0]?.outputDimensionality;
    if (dims !== undefined) out.dimensions = dims;
    return out;
  },
  recordedRequest: (req) => ({ requests: req.requests.map((r) => ({ content: r.content })) }),
  /** `{embedding: {values}}` for `embedContent`, `{embeddings: [{values}]}` for the batch (floats). */
  embeddingBody(_model, result, _usage, _cost, req) {
    const vectors = result.embeddings.map((v) => ({ values: v as number[] }));
    return req.action === 'embedContent' ? { embedding: vectors[0] } : { embeddings: vectors };
  },
  errorBody: geminiErrorBody,
};
