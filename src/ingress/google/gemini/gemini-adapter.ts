import { GatewayError } from '../../../errors/gateway-error.js';
import type { PlannedEndpoint } from '../../../routing/route-plan.js';
import type { ApiRoute, GenerationIngress } from '../../types.js';
import { geminiErrorBody } from '../error-envelope.js';
import { geminiModelListShape } from '../models/gemini-model-list.js';
import { builtInTools, convertGeminiToChat } from './convert-gemini-to-chat.js';
import { geminiRequestFromUrl, parseGeminiRequest, type GeminiApiRequest } from './gemini-request-schema.js';
import { geminiResponseBody } from './gemini-response-body.js';
import { geminiStreamEncoder } from './gemini-stream-encoder.js';

const JSON_ARRAY_STREAM = { contentType: 'application/json; charset=utf-8', keepAlive: '\n' } as const;

/** Losses of each request's translation, kept until its attempts are built. */
const translationLosses = new WeakMap<GeminiApiRequest, string[]>();

/**
 * The version prefixes the Gemini API is served under: `/v1beta` (the default of Google's SDKs
 * and the Gemini CLI), `/v1` (`apiVersion: "v1"`) and none (a base URL that carries it).
 */
export const GEMINI_VERSIONS = ['/v1beta', '/v1', ''] as const;

/** The custom-method routes (`POST {version}/models/{model}:{action}`) of one action, per version. */
export const geminiActionRoutes = (action: string, operation: ApiRoute['operation']): ApiRoute[] =>
  GEMINI_VERSIONS.map((v) => ({ method: 'POST', path: `${v}/models/*`, action, operation, access: 'key', keyInQuery: true, requestBody: geminiRequestFromUrl }));

/** A `countTokens` body's `generateContentRequest`, with the URL's members (its own `model` gives way to the URL's). */
function unwrapCountRequest(body: unknown): unknown {
  const b = body as Record<string, unknown> | null;
  const inner = b && typeof b === 'object' ? b.generateContentRequest : undefined;
  if (!inner || typeof inner !== 'object' || Array.isArray(inner)) return body;
  return { ...(inner as Record<string, unknown>), model: b!.model, stream: false, alt: 'sse', models: b!.models, provider: b!.provider, op: b!.op };
}

/** Whether an endpoint is Gemini itself: kind `gemini`, or `vertex` with publisher `google` (both take the Gemini API natively). */
const isGemini = (p: PlannedEndpoint): boolean => p.target.provider.kind === 'gemini' || (p.target.provider.kind === 'vertex' && p.target.provider.vertex?.publisher === 'google');

/**
 * Google's built-in tools (`googleSearch`, `urlContext`, `codeExecution` …) run only on Gemini
 * itself: a request with one is served by `gemini` endpoints and Gemini-on-Vertex endpoints
 * only (their native lanes send the tool on).
 * @throws GatewayError `unsupported_parameter` (400, `param` = the tool) when the model has no
 *   such endpoint.
 */
function restrictToGoogleTools(req: GeminiApiRequest, plan: PlannedEndpoint[]): PlannedEndpoint[] {
  const builtIn = builtInTools(req);
  if (builtIn.length === 0) return plan;
  const serving = plan.filter(isGemini);
  if (serving.length > 0) return serving;
  const first = builtIn[0]!;
  const kinds = [...new Set(plan.map((p) => p.target.provider.kind))].join(', ');
  throw new GatewayError('unsupported_parameter', `tools[${first.index}].${first.name}: Google's built-in tools run only on gemini endpoints (and vertex ones of publisher google), and ${JSON.stringify(req.model)} is served by ${kinds}; declare the function yourself or pick a Gemini model`, { param: `tools[${first.index}].${first.name}` });
}

/**
 * The Gemini API (`POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent`,
 * `alt=sse` or the streamed JSON array; the `/v1` and unversioned paths too), for the Gemini CLI
 * and Google's GenAI SDKs. The model and the stream flag are in the URL (the route puts them in
 * the body, {@link geminiRequestFromUrl}); the key comes as `x-goog-api-key`, `?key=` or Bearer.
 * To `gemini` endpoints the client's body goes through natively
 * (providers/gemini/native/generate-content.ts); to every other kind it is translated through
 * the internal request, the losses listed as warnings in the generation record. `countTokens`
 * counts like Messages' `count_tokens` (the upstream's count on a `gemini` endpoint, else the
 * gateway's estimate). Embeddings are the sibling adapter (gemini-embeddings-adapter.ts).
 * @see https://ai.google.dev/api/generate-content
 */
export const geminiIngress: GenerationIngress<GeminiApiRequest> = {
  api: 'gemini',
  // The registry's own `POST path` route; the real routes are the custom methods below.
  path: '/v1beta/generateContent',
  routes: [
    ...geminiActionRoutes('generateContent', 'generate'),
    ...geminiActionRoutes('streamGenerateContent', 'generate'),
    ...geminiActionRoutes('countTokens', 'count-tokens'),
    ...GEMINI_VERSIONS.filter((v) => v !== '/v1').flatMap((v): ApiRoute[] => [
      { method: 'GET', path: `${v}/models`, operation: 'list-models', access: 'key', keyInQuery: true },
      { method: 'GET', path: `${v}/models/*`, operation: 'get-model', access: 'key', keyInQuery: true },
    ]),
  ],
  pathPrefixes: ['/v1beta/'],
  genAiOperation: 'chat',
  bodyLists: { items: { field: 'contents', noun: 'contents' }, partFields: ['parts'], topParts: [], fixed: [['tools', 512, 'at most 512 tools are allowed']] },
  outputLimitParam: () => 'generationConfig.maxOutputTokens',
  reasoningLimitParam: 'generationConfig.maxOutputTokens',
  modelList: geminiModelListShape,
  output: 'generation',
  contentBlocks: false,
  parse: parseGeminiRequest,
  toChat(req) {
    const { chat, warnings } = convertGeminiToChat(req);
    translationLosses.set(req, warnings);
    return chat;
  },
  translationWarnings: (req) => translationLosses.get(req) ?? [],
  restrictPlan: restrictToGoogleTools,
  countTokens: {
    // `{contents}` or `{generateContentRequest: {model, contents, …}}` (neither: `contents` is required).
    parse: (body) => parseGeminiRequest(unwrapCountRequest(body)),
    body: (count) => ({ totalTokens: count }),
  },
  recordedRequest: (req) => ({ systemInstruction: req.systemInstruction, contents: req.contents }),
  createStreamEncoder: (ident, req) => geminiStreamEncoder(ident, req.alt),
  // The streamed JSON array: JSON whitespace keeps the connection alive before the `[`.
  streamFraming: (req) => (req.alt === 'json' ? JSON_ARRAY_STREAM : undefined),
  responseBody: (ident, result, usage) => geminiResponseBody(ident, result, usage),
  errorBody: geminiErrorBody,
  // A 404 reads as "no such model" to Google's clients: an existing model that cannot serve the request is a 400.
  unservableStatus: 400,
};
