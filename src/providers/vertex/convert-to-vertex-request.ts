import type { ChatRequest } from '../../core/chat-types.js';
import type { ProviderTarget, UpstreamCall } from '../types.js';
import { convertToAnthropicRequest } from '../anthropic/convert-to-anthropic-request.js';
import type { ContentsOptions } from '../gemini/convert-to-gemini-contents.js';
import { convertToGeminiRequest } from '../gemini/convert-to-gemini-request.js';
import type { GeminiContent, GeminiRequest } from '../gemini/gemini-wire-types.js';
import type { VertexCredentials } from './vertex-credentials.js';
import { VERTEX_ANTHROPIC_VERSION, type VertexPublisher } from './vertex-wire-types.js';

/** A provider's `vertex` settings as the adapter reads them (config/schema.ts fills the defaults). */
export interface VertexSettings {
  readonly project: string;
  readonly location: string;
  readonly publisher: VertexPublisher;
  readonly api_version: 'v1' | 'v1beta1';
}

/**
 * The host of a location: `global` → `https://aiplatform.googleapis.com`; the multi-regions `us`
 * and `eu` → `https://aiplatform.{us|eu}.rep.googleapis.com`; a region →
 * `https://{region}-aiplatform.googleapis.com`. A provider's `base_url` replaces it (a private
 * endpoint, a proxy, a test upstream).
 * @see https://cloud.google.com/vertex-ai/generative-ai/docs/learn/locations
 */
export function vertexHost(location: string, baseUrl?: string): string {
  if (baseUrl) return baseUrl.replace(/\/+$/, '');
  if (location === 'global') return 'https://aiplatform.googleapis.com';
  if (location === 'us' || location === 'eu') return `https://aiplatform.${location}.rep.googleapis.com`;
  return `https://${location}-aiplatform.googleapis.com`;
}

/** The endpoint's location: its own `vertex.location`, else the provider's. */
export function vertexLocation(target: ProviderTarget, settings: VertexSettings): string {
  return target.endpoint.vertex?.location ?? settings.location;
}

/**
 * `<host>/<version>/projects/<p>/locations/<l>/publishers/<publisher>/models/<model>:<method>`;
 * project, location and model percent-encoded as the Anthropic Vertex SDK does (RFC 3986 path
 * characters kept, so `claude-sonnet-4-5@20250929` stays as written; `/` and `;` encoded),
 * `method` may carry a query (`streamGenerateContent?alt=sse`).
 */
export function vertexModelUrl(target: ProviderTarget, settings: VertexSettings, model: string, method: string): string {
  const location = vertexLocation(target, settings);
  const enc = (s: string) => s.replace(/[^A-Za-z0-9\-._~!$&'()*+,=:@]+/g, encodeURIComponent);
  return `${vertexHost(location, target.provider.base_url)}/${settings.api_version}/projects/${enc(settings.project)}/locations/${enc(location)}/publishers/${settings.publisher}/models/${enc(model)}:${method}`;
}

/** JSON content type and accept, the bearer (and quota project), then the provider's own `headers`. */
export async function vertexHeaders(target: ProviderTarget, credentials: VertexCredentials, stream: boolean): Promise<Record<string, string>> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: stream ? 'text/event-stream' : 'application/json', ...(await credentials.headers()) };
  for (const [k, v] of Object.entries(target.provider.headers)) headers[k.toLowerCase()] = v;
  return headers;
}

/**
 * Every content with its `role` (Vertex refuses a content without one, 400 "Please use a valid
 * role: user, model."; the Gemini conversions set it already, so this only guards), `user` when
 * missing.
 */
export function withRoles(body: GeminiRequest): GeminiRequest {
  const hasRole = (c: GeminiContent): boolean => typeof (c as { role?: unknown }).role === 'string';
  if (body.contents.every(hasRole)) return body;
  return { ...body, contents: body.contents.map((c) => (hasRole(c) ? c : { ...c, role: 'user' })) };
}

/**
 * A chat request to a Gemini model on Vertex: the gemini kind's conversion
 * (`convertToGeminiRequest`: the same body, dropped parameters and warnings), sent to
 * `…/publishers/google/models/<m>:generateContent` (or `:streamGenerateContent?alt=sse`) with
 * the bearer instead of an API key.
 * @throws GatewayError as `convertToGeminiRequest`; `upstream_auth_failed` without a token.
 */
export async function convertToVertexGeminiRequest(
  req: ChatRequest,
  target: ProviderTarget,
  stream: boolean,
  settings: VertexSettings,
  credentials: VertexCredentials,
  fetchImage: ContentsOptions['fetchImage'],
): Promise<UpstreamCall> {
  const call = await convertToGeminiRequest(req, target, stream, fetchImage);
  const body = withRoles(JSON.parse(call.body) as GeminiRequest);
  return {
    ...call,
    url: vertexModelUrl(target, settings, target.endpoint.upstream_model, stream ? 'streamGenerateContent?alt=sse' : 'generateContent'),
    headers: await vertexHeaders(target, credentials, stream),
    body: JSON.stringify(body),
  };
}

/**
 * A Messages body for Vertex: `model` removed (it is in the path) and `anthropic_version:
 * vertex-2023-10-16` added, every other member as given.
 */
export function toVertexAnthropicBody(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...body };
  delete out.model;
  out.anthropic_version = VERTEX_ANTHROPIC_VERSION;
  return out;
}

/**
 * Headers of a Claude call: {@link vertexHeaders}, and `anthropic-beta` (the provider's
 * configured betas, then the client's). Vertex reads the version from the body, so no
 * `anthropic-version` header is sent (the provider's `headers` may still set one).
 */
export async function vertexAnthropicHeaders(target: ProviderTarget, credentials: VertexCredentials, stream: boolean, clientBeta?: string): Promise<Record<string, string>> {
  const headers = await vertexHeaders(target, credentials, stream);
  if (clientBeta) headers['anthropic-beta'] = headers['anthropic-beta'] ? `${headers['anthropic-beta']},${clientBeta}` : clientBeta;
  return headers;
}

/**
 * A chat request to a Claude model on Vertex: the anthropic kind's conversion
 * (`convertToAnthropicRequest`: the same Messages body, dropped parameters and warnings), its
 * body made a Vertex one ({@link toVertexAnthropicBody}), sent to
 * `…/publishers/anthropic/models/<m>:rawPredict` (or `:streamRawPredict`, `stream: true` kept).
 * @throws GatewayError as `convertToAnthropicRequest`; `upstream_auth_failed` without a token.
 */
export async function convertToVertexAnthropicRequest(req: ChatRequest, target: ProviderTarget, stream: boolean, settings: VertexSettings, credentials: VertexCredentials): Promise<UpstreamCall> {
  const call = convertToAnthropicRequest(req, target, stream);
  const body = toVertexAnthropicBody(JSON.parse(call.body) as Record<string, unknown>);
  return {
    ...call,
    url: vertexModelUrl(target, settings, target.endpoint.upstream_model, stream ? 'streamRawPredict' : 'rawPredict'),
    headers: await vertexAnthropicHeaders(target, credentials, stream),
    body: JSON.stringify(body),
  };
}
