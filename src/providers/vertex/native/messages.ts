import type { NativeLane, ProviderTarget, UpstreamCall } from '../../types.js';
import { nativeMessagesBody, type NativeMessagesRequest } from '../../anthropic/native/messages.js';
import { toVertexAnthropicBody, vertexAnthropicHeaders, vertexModelUrl, type VertexSettings } from '../convert-to-vertex-request.js';
import type { VertexCredentials } from '../vertex-credentials.js';

/**
 * The native lane Messages API → `vertex` provider of publisher `anthropic` (Claude on Vertex):
 * the anthropic kind's pass-through body (`nativeMessagesBody`: only the gateway's edits, so
 * thinking signatures, `cache_control` and server tools go through as sent), made a Vertex body
 * (no `model`, `anthropic_version: vertex-2023-10-16`), to `:rawPredict` / `:streamRawPredict`;
 * the client's `anthropic-beta` goes in the header. The answer is native Anthropic, read by the
 * anthropic kind's parsers.
 * @see https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/use-claude
 */

/** The native `:rawPredict` / `:streamRawPredict` call. */
export async function vertexMessagesCall(
  req: NativeMessagesRequest,
  target: ProviderTarget,
  stream: boolean,
  client: Readonly<Record<string, string>>,
  settings: VertexSettings,
  credentials: VertexCredentials,
): Promise<UpstreamCall> {
  const warnings: string[] = [];
  const body = toVertexAnthropicBody(nativeMessagesBody(req, target, warnings));
  if (stream) body.stream = true;
  else delete body.stream;
  return {
    url: vertexModelUrl(target, settings, target.endpoint.upstream_model, stream ? 'streamRawPredict' : 'rawPredict'),
    headers: await vertexAnthropicHeaders(target, credentials, stream, client['anthropic-beta']),
    body: JSON.stringify(body),
    dropped: [],
    warnings,
  };
}

/**
 * The count call, `POST …/publishers/anthropic/models/count-tokens:rawPredict` with the model
 * in the body (its name before any `@version`: Vertex refuses `…@default` for counting), without
 * `max_tokens` and `stream`. Served in a few locations only; a failure falls back to the
 * gateway's estimate (pipeline/stages/count-tokens.ts).
 * @see https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/count-tokens
 */
export async function vertexCountTokensCall(req: NativeMessagesRequest, target: ProviderTarget, client: Readonly<Record<string, string>>, settings: VertexSettings, credentials: VertexCredentials): Promise<UpstreamCall> {
  const warnings: string[] = [];
  const body = toVertexAnthropicBody(nativeMessagesBody(req, target, warnings));
  delete body.max_tokens;
  delete body.stream;
  body.model = target.endpoint.upstream_model.replace(/@.*$/, '');
  return {
    url: vertexModelUrl(target, settings, 'count-tokens', 'rawPredict'),
    headers: await vertexAnthropicHeaders(target, credentials, false, client['anthropic-beta']),
    body: JSON.stringify(body),
    dropped: [],
    warnings,
  };
}

/** The Messages API's native lane of a Claude-on-Vertex provider (every endpoint of it serves Messages). */
export function vertexMessagesLane(settings: VertexSettings, credentials: VertexCredentials): NativeLane<NativeMessagesRequest> {
  return {
    native: true,
    operation: 'chat',
    relayUpstream: true,
    buildCall: (req, target, stream, headers) => vertexMessagesCall(req, target, stream, headers, settings, credentials),
    countTokens: (req, target, headers) => vertexCountTokensCall(req, target, headers, settings, credentials),
  };
}
