import type { GeminiRequest } from '../../gemini/gemini-wire-types.js';
import { nativeGeminiBody, type NativeGeminiRequest } from '../../gemini/native/generate-content.js';
import type { NativeLane, ProviderTarget, UpstreamCall } from '../../types.js';
import { vertexHeaders, vertexModelUrl, withRoles, type VertexSettings } from '../convert-to-vertex-request.js';
import type { VertexCredentials } from '../vertex-credentials.js';

/**
 * The native lane Gemini API → `vertex` provider of publisher `google` (Gemini on Vertex AI):
 * the gemini kind's pass-through body (`nativeGeminiBody`: only the gateway's edits, so thought
 * parts, `thoughtSignature`, `safetySettings`, Google's built-in tools and unknown members go
 * through as sent), to `…/publishers/google/models/<m>:generateContent` or
 * `:streamGenerateContent?alt=sse` with the provider's bearer. Two edits Vertex needs, each a
 * warning in the record: a content without `role` gets `user` (Vertex refuses it), and the `id`
 * of `functionCall` / `functionResponse` parts is left out (Vertex's REST schema has no such
 * field: 400 `Unknown name "id" at 'contents[i].parts[j].function_call'`; the Gemini CLI and
 * `@google/genai` send one). The answer is Vertex's own, relayed as the gemini kind's lane does
 * (events as SSE, or as the elements of the streamed JSON array).
 * @see https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/projects.locations.publishers.models/generateContent
 */

/**
 * The body with the `id` of every `functionCall` and `functionResponse` part left out; one
 * warning names how many. The request is not changed.
 */
export function withoutFunctionIds(body: Record<string, unknown>, warnings: string[]): Record<string, unknown> {
  const contents = body.contents;
  if (!Array.isArray(contents)) return body;
  let removed = 0;
  const strip = (part: unknown): unknown => {
    if (!part || typeof part !== 'object') return part;
    let out = part as Record<string, unknown>;
    for (const member of ['functionCall', 'functionResponse'] as const) {
      const inner = out[member] as Record<string, unknown> | undefined;
      if (inner && typeof inner === 'object' && 'id' in inner) {
        const { id: _id, ...rest } = inner;
        out = { ...out, [member]: rest };
        removed++;
      }
    }
    return out;
  };
  const next = contents.map((c: unknown) => {
    const parts = (c as { parts?: unknown } | null)?.parts;
    return Array.isArray(parts) ? { ...(c as Record<string, unknown>), parts: parts.map(strip) } : c;
  });
  if (removed === 0) return body;
  warnings.push(`functionCall/functionResponse id left out of ${removed} part${removed === 1 ? '' : 's'}: Vertex AI does not accept it (calls and responses pair by name and order)`);
  return { ...body, contents: next };
}

/** The Vertex body: {@link nativeGeminiBody}, function ids left out, every content with a role. */
function vertexNativeBody(req: NativeGeminiRequest, target: ProviderTarget, warnings: string[]): Record<string, unknown> {
  const body = withoutFunctionIds(nativeGeminiBody(req, target, warnings), warnings);
  const withRole = withRoles(body as unknown as GeminiRequest) as unknown as Record<string, unknown>;
  if (withRole !== body) warnings.push('contents without role sent as role "user" (Vertex AI requires one)');
  return withRole;
}

/** The native `:generateContent` / `:streamGenerateContent?alt=sse` call on Vertex. */
export async function vertexGenerateContentCall(req: NativeGeminiRequest, target: ProviderTarget, stream: boolean, settings: VertexSettings, credentials: VertexCredentials): Promise<UpstreamCall> {
  const warnings: string[] = [];
  const body = vertexNativeBody(req, target, warnings);
  return {
    url: vertexModelUrl(target, settings, target.endpoint.upstream_model, stream ? 'streamGenerateContent?alt=sse' : 'generateContent'),
    headers: await vertexHeaders(target, credentials, stream),
    body: JSON.stringify(body),
    dropped: [],
    warnings,
  };
}

/**
 * The native `:countTokens` call on Vertex: `{contents, systemInstruction, tools,
 * generationConfig}` (Vertex's `CountTokensRequest` has no `generateContentRequest`); the answer
 * holds `totalTokens`.
 * @see https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/projects.locations.publishers.models/countTokens
 */
export async function vertexCountTokensCall(req: NativeGeminiRequest, target: ProviderTarget, settings: VertexSettings, credentials: VertexCredentials): Promise<UpstreamCall> {
  const body = vertexNativeBody(req, target, []);
  const count: Record<string, unknown> = { contents: body.contents };
  for (const member of ['systemInstruction', 'tools', 'generationConfig'] as const) if (body[member] !== undefined) count[member] = body[member];
  return {
    url: vertexModelUrl(target, settings, target.endpoint.upstream_model, 'countTokens'),
    headers: await vertexHeaders(target, credentials, false),
    body: JSON.stringify(count),
    dropped: [],
  };
}

/** The Gemini API's native lane of a Gemini-on-Vertex provider (every endpoint of it serves the Gemini API). */
export function vertexGenerateContentLane(settings: VertexSettings, credentials: VertexCredentials): NativeLane<NativeGeminiRequest> {
  return {
    native: true,
    operation: 'chat',
    relayUpstream: true,
    buildCall: (req, target, stream) => vertexGenerateContentCall(req, target, stream, settings, credentials),
    countTokens: (req, target) => vertexCountTokensCall(req, target, settings, credentials),
    readCount: (body) => {
      const n = (body as { totalTokens?: unknown } | null)?.totalTokens;
      return typeof n === 'number' ? n : undefined;
    },
  };
}
