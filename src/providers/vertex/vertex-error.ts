import type { GatewayError } from '../../errors/gateway-error.js';
import { parseAnthropicErrorResponse } from '../anthropic/anthropic-error.js';
import { parseGeminiErrorResponse } from '../gemini/gemini-error.js';

/**
 * Whether an error body is in the Anthropic envelope (`{"type":"error","error":{"type":…}}`,
 * sent by Claude models on Vertex) rather than Google's (`{"error":{"code","message","status"}}`,
 * sent by Gemini models and by Vertex's front end for every model: auth, quota, a bad path).
 */
export function isAnthropicErrorBody(bodyText: string): boolean {
  try {
    const parsed = JSON.parse(bodyText) as { type?: unknown; error?: { type?: unknown; status?: unknown } } | null;
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return false;
    return parsed.type === 'error' || (typeof parsed.error?.type === 'string' && parsed.error.status === undefined);
  } catch {
    return false;
  }
}

/**
 * Turn a non-2xx Vertex response into a catalog error, whichever envelope it comes in: the
 * Anthropic one by the anthropic kind's parser (`rate_limit_error` → `upstream_rate_limited`,
 * `overloaded_error` → `upstream_overloaded`, "prompt is too long" → `context_length_exceeded` …),
 * everything else by the gemini kind's (`RESOURCE_EXHAUSTED` 429 → `upstream_rate_limited`,
 * `UNAVAILABLE` 503 → `upstream_overloaded`, `INTERNAL` 500 → `upstream_error`,
 * `DEADLINE_EXCEEDED` 504 → `upstream_timeout`, `UNAUTHENTICATED` 401 / `PERMISSION_DENIED` 403
 * → `upstream_auth_failed`, `INVALID_ARGUMENT` / `FAILED_PRECONDITION` 400 →
 * `upstream_bad_request` (terminal); a non-JSON body keeps its text). `NOT_FOUND` 404 is
 * `upstream_error`, as for every kind (upstream-errors.ts): a model missing from one location or
 * project is that endpoint's problem, and on Vertex models differ by location, so the request
 * fails over. `Retry-After` is read from the header (and Google's `RetryInfo` detail).
 * @see https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/api-errors
 */
export function parseVertexErrorResponse(providerId: string, status: number, headers: Record<string, string | string[] | undefined>, bodyText: string): GatewayError {
  return isAnthropicErrorBody(bodyText) ? parseAnthropicErrorResponse(providerId, status, headers, bodyText) : parseGeminiErrorResponse(providerId, status, headers, bodyText);
}
