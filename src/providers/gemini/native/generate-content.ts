import { clampOutputLimit } from '../../../core/output-limit.js';
import type { NativeLane, ProviderTarget, UpstreamCall } from '../../types.js';
import { geminiHeaders, geminiMethodUrl, geminiModelName } from '../convert-to-gemini-request.js';

/**
 * The native lane Gemini API → `gemini` provider ("same format in and out"): the client's
 * `GenerateContentRequest` goes upstream with only the gateway's edits, and the upstream's
 * events or body come back as sent (thought parts, `thoughtSignature`, grounding and safety
 * fields, Google's built-in tools all survive), while the adapter's parser reads usage and
 * errors from them. Its second operation is `countTokens`.
 * @see https://ai.google.dev/api/generate-content
 */

/**
 * The members of a validated Gemini API request (ingress/google/gemini/gemini-request-schema.ts)
 * the gateway reads or edits; every other member goes upstream as sent. `model`, `stream` and
 * `alt` come from the URL.
 */
export interface NativeGeminiRequest {
  readonly model: string;
  readonly stream: boolean;
  /** `sse` (`alt=sse`) or `json` (the streamed JSON array). */
  readonly alt: 'sse' | 'json';
  readonly generationConfig?: { readonly maxOutputTokens?: number; readonly [field: string]: unknown };
  readonly [field: string]: unknown;
}

/** Members that are the gateway's, never Gemini's. */
const GATEWAY_MEMBERS = ['model', 'stream', 'alt', 'models', 'provider', 'op'] as const;

/**
 * The client's body with only the gateway's edits, for a `gemini` endpoint: the URL's and the
 * gateway's members removed (the model goes in the upstream URL: the endpoint's
 * `upstream_model`), `generationConfig.maxOutputTokens` capped at the endpoint's
 * `max_completion_tokens` (routing sends a larger one here only under `output_limit: clamp`),
 * each edit a warning.
 */
export function nativeGeminiBody(req: NativeGeminiRequest, target: ProviderTarget, warnings: string[]): Record<string, unknown> {
  const body: Record<string, unknown> = { ...req };
  for (const m of GATEWAY_MEMBERS) delete body[m];
  const asked = req.generationConfig?.maxOutputTokens;
  const capped = clampOutputLimit(asked, target.endpoint.max_completion_tokens, 'generationConfig.maxOutputTokens', warnings);
  if (capped !== asked) body.generationConfig = { ...req.generationConfig, maxOutputTokens: capped };
  return body;
}

/** The native `:generateContent` / `:streamGenerateContent?alt=sse` call (the pass-through lane). */
export function nativeGenerateContentCall(req: NativeGeminiRequest, target: ProviderTarget, stream: boolean): UpstreamCall {
  const warnings: string[] = [];
  const body = nativeGeminiBody(req, target, warnings);
  const url = geminiMethodUrl(target.provider.base_url, target.endpoint.upstream_model, stream ? 'streamGenerateContent?alt=sse' : 'generateContent');
  return { url, headers: geminiHeaders(target, stream), body: JSON.stringify(body), dropped: [], warnings };
}

/**
 * The native `:countTokens` call: the request as a `generateContentRequest` (so the system
 * instruction and tools are counted), the model's resource name in it.
 * @see https://ai.google.dev/api/tokens#method:-models.counttokens
 */
export function nativeCountTokensCall(req: NativeGeminiRequest, target: ProviderTarget): UpstreamCall {
  const body = nativeGeminiBody(req, target, []);
  const url = geminiMethodUrl(target.provider.base_url, target.endpoint.upstream_model, 'countTokens');
  return { url, headers: geminiHeaders(target, false), body: JSON.stringify({ generateContentRequest: { model: geminiModelName(target.endpoint.upstream_model), ...body } }), dropped: [] };
}

/**
 * The Gemini API's native lane of the `gemini` kind. The upstream is always asked for `alt=sse`,
 * and its events are relayed as they came: as SSE when the client asked for `alt=sse`, else as
 * the elements of the streamed JSON array (the ingress's encoder `relay`s their bytes). No
 * endpoint flag is needed.
 */
export const GEMINI_GENERATE_CONTENT_LANE: NativeLane<NativeGeminiRequest> = {
  native: true,
  operation: 'chat',
  relayUpstream: true,
  buildCall: (req, target, stream) => nativeGenerateContentCall(req, target, stream),
  countTokens: (req, target) => nativeCountTokensCall(req, target),
  readCount: (body) => {
    const n = (body as { totalTokens?: unknown } | null)?.totalTokens;
    return typeof n === 'number' ? n : undefined;
  },
};
