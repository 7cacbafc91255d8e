import { GatewayError } from '../../errors/gateway-error.js';
import { parseRetryAfter, redactSecrets, UPSTREAM_TEXT_READ_LIMIT, upstreamFailureToError } from '../upstream-errors.js';
import type { GeminiErrorWire } from './gemini-wire-types.js';

import { inBandErrorStatus } from '../in-band-error-status.js';

/** Read limit of upstream error text: cut to its final length only after redaction (clientSafeUpstreamError). */
const MAX_MESSAGE = UPSTREAM_TEXT_READ_LIMIT;

/** A Gemini 4xx/5xx message saying the prompt is over the model's input limit. */
const TOKEN_LIMIT = [/input token count.*exceeds/i, /exceeds the maximum number of tokens/i, /token count.*exceeds.*limit/i];

/** What a Gemini error body says. */
export interface GeminiErrorInfo {
  message: string;
  /** Canonical status, e.g. `INVALID_ARGUMENT`, `RESOURCE_EXHAUSTED`. */
  status: string | null;
  /** HTTP-like `code` from the body. */
  code: number | null;
  /** `google.rpc.ErrorInfo` reason, e.g. `API_KEY_INVALID`. */
  reason: string | null;
  /** `google.rpc.RetryInfo` delay, in whole seconds (rounded up). */
  retryDelaySeconds: number | undefined;
}

/** `"34.4s"` (protobuf Duration JSON) → 35. */
function durationSeconds(v: unknown): number | undefined {
  if (typeof v !== 'string') return undefined;
  const m = /^(\d+(?:\.\d+)?)s$/.exec(v.trim());
  return m ? Math.ceil(Number(m[1])) : undefined;
}

/** Read a `google.rpc.Status`-style error object. */
export function readGeminiError(err: GeminiErrorWire | null | undefined): GeminiErrorInfo {
  const e = err && typeof err === 'object' ? err : {};
  let reason: string | null = null;
  let retryDelaySeconds: number | undefined;
  for (const d of Array.isArray(e.details) ? e.details : []) {
    if (!d || typeof d !== 'object') continue;
    const type = String(d['@type'] ?? '');
    if (type.endsWith('google.rpc.ErrorInfo') && typeof d.reason === 'string') reason = d.reason;
    if (type.endsWith('google.rpc.RetryInfo')) retryDelaySeconds = durationSeconds(d.retryDelay);
  }
  return {
    message: String(e.message ?? '').slice(0, MAX_MESSAGE),
    status: typeof e.status === 'string' ? e.status : null,
    code: typeof e.code === 'number' ? e.code : null,
    reason,
    retryDelaySeconds,
  };
}

/** Pull the error object out of a body: `{error:{…}}`, or `[{error:{…}}]` (non-SSE stream endpoint). */
function errorObjectOf(parsed: unknown): GeminiErrorWire | undefined {
  const first = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!first || typeof first !== 'object') return undefined;
  const err = (first as { error?: unknown }).error;
  if (typeof err === 'string') return { message: err };
  return err && typeof err === 'object' ? (err as GeminiErrorWire) : undefined;
}

/** Whether a 400 is really a bad API key (Gemini answers an invalid key with 400, not 401). */
function isApiKeyError(info: GeminiErrorInfo): boolean {
  if (info.reason === 'API_KEY_INVALID' || info.reason === 'API_KEY_EXPIRED') return true;
  return (info.status === 'INVALID_ARGUMENT' || info.status === 'UNAUTHENTICATED' || info.status === null) && /api[ _-]?key/i.test(info.message);
}

/**
 * Map a Gemini failure to a catalog error:
 *
 * - a 400 about the API key (`API_KEY_INVALID`, or INVALID_ARGUMENT whose message names the
 *   API key) → `upstream_auth_failed`, like a 401;
 * - a message about the input token limit (on a 400, and on the 500 Gemini sometimes sends for
 *   it) → `context_length_exceeded`;
 * - everything else by HTTP status ({@link upstreamFailureToError}): 429 RESOURCE_EXHAUSTED →
 *   `upstream_rate_limited`, 503 UNAVAILABLE → `upstream_overloaded`, 500 INTERNAL →
 *   `upstream_error`, 504 DEADLINE_EXCEEDED → `upstream_timeout`, 401/403 →
 *   `upstream_auth_failed`, other 4xx → `upstream_bad_request` with Gemini's message.
 *
 * `Retry-After` comes from the header, else from the `RetryInfo` detail's `retryDelay`.
 * @see https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes
 */
export function geminiFailureToError(providerId: string, status: number, info: GeminiErrorInfo, retryAfterHeader?: number): GatewayError {
  const retryAfterSeconds = retryAfterHeader ?? info.retryDelaySeconds;
  const upstreamCode = info.reason ?? info.status;
  if (status >= 400 && TOKEN_LIMIT.some((re) => re.test(info.message))) {
    const metadata: Record<string, unknown> = { provider_name: providerId, upstream_status: status };
    if (upstreamCode) metadata.upstream_code = upstreamCode;
    const message = redactSecrets(info.message);
    const upstream = { status, code: info.reason, type: info.status, param: null, message };
    return new GatewayError('context_length_exceeded', message, { param: 'messages', metadata, upstream });
  }
  const effective = status === 400 && isApiKeyError(info) ? 401 : status;
  const err = upstreamFailureToError({ providerId, status: effective, message: info.message, upstreamCode: info.reason, upstreamType: info.status, retryAfterSeconds });
  if (err.upstream) err.upstream.status = status;
  if (effective !== status && err.metadata) err.metadata.upstream_status = status;
  return err;
}

/**
 * Turn a non-2xx Gemini response into a catalog error (see {@link geminiFailureToError}).
 * A body that is not JSON keeps its text (tags stripped) as the message.
 * @see https://ai.google.dev/api/rest/v1beta/Status
 */
export function parseGeminiErrorResponse(
  providerId: string,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  bodyText: string,
): GatewayError {
  let info: GeminiErrorInfo;
  try {
    const err = errorObjectOf(JSON.parse(bodyText));
    info = err ? readGeminiError(err) : readGeminiError({ message: bodyText });
  } catch {
    info = readGeminiError({ message: bodyText.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim() });
  }
  return geminiFailureToError(providerId, status, info, parseRetryAfter(headers['retry-after']));
}

/**
 * An error object inside a 200 response or stream event, mapped through the catalog by its
 * canonical status or HTTP-like `code` ({@link inBandErrorStatus}: `RESOURCE_EXHAUSTED` or 429
 * → `upstream_rate_limited`, `UNAVAILABLE` or 503 → `upstream_overloaded` …); a code that names
 * nothing better (a 400 `INVALID_ARGUMENT` after the request was accepted, or none) is an
 * `upstream_error` (502): another endpoint may do better.
 */
export function inBandGeminiError(providerId: string, error: GeminiErrorWire): GatewayError {
  const info = readGeminiError(error);
  const message = info.message || 'error inside the upstream response';
  const status = inBandErrorStatus({ code: info.code, type: info.status, message });
  return geminiFailureToError(providerId, status, { ...info, message });
}
