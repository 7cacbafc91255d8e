import { isContextLengthMessage } from './upstream-errors.js';

/** What an error object found inside an HTTP 200 answer (a stream event or a JSON body) says. */
export interface InBandErrorFacts {
  /** The upstream's `code`: a string name (`context_length_exceeded`) or a number (an HTTP status). */
  code?: unknown;
  /** The upstream's `type` (`rate_limit_error`) or canonical status (`RESOURCE_EXHAUSTED`). */
  type?: unknown;
  message: string;
}

/** Upstream error names (OpenAI codes and types, Anthropic types, Google canonical codes) and the HTTP status each stands for. */
const STATUS_BY_NAME: ReadonlyMap<string, number> = new Map([
  ['context_length_exceeded', 400],
  ['rate_limit_exceeded', 429],
  ['rate_limit_error', 429],
  ['rate_limited', 429],
  ['too_many_requests', 429],
  ['insufficient_quota', 429],
  ['resource_exhausted', 429],
  ['overloaded_error', 503],
  ['overloaded', 503],
  ['server_overloaded', 503],
  ['service_unavailable', 503],
  ['unavailable', 503],
  ['timeout', 504],
  ['timeout_error', 504],
  ['deadline_exceeded', 504],
  ['invalid_api_key', 401],
  ['authentication_error', 401],
  ['unauthenticated', 401],
  ['permission_error', 403],
  ['permission_denied', 403],
]);

const nameOf = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v.toLowerCase() : undefined);

/**
 * The HTTP status an in-band error stands for, so it maps through the catalog like the same
 * error sent as an HTTP status would:
 *
 * - a named code or type wins: `context_length_exceeded` (or a message saying the context
 *   window is exceeded) → 400, rate limits (`rate_limit_exceeded`, `rate_limit_error`,
 *   `RESOURCE_EXHAUSTED` …) → 429, overload → 503, timeouts → 504, credentials → 401/403;
 * - else a numeric code that is an HTTP status (OpenRouter, vLLM, Gemini): 408, 429 and 5xx as
 *   they are; any other 4xx → 502, because the upstream accepted the request and then failed,
 *   so another endpoint may do better;
 * - else 500 (`upstream_error`).
 * @see https://platform.openai.com/docs/guides/error-codes
 * @see https://openrouter.ai/docs/api-reference/errors#error-during-streaming
 */
export function inBandErrorStatus(f: InBandErrorFacts): number {
  for (const name of [nameOf(f.code), nameOf(f.type)]) {
    const status = name === undefined ? undefined : STATUS_BY_NAME.get(name);
    if (status !== undefined) return status;
  }
  if (isContextLengthMessage(f.message)) return 400;
  const numeric = typeof f.code === 'number' ? f.code : typeof f.code === 'string' && /^\d{3}$/.test(f.code) ? Number(f.code) : null;
  if (numeric === null || numeric < 400 || numeric >= 600) return 500;
  if (numeric >= 500 || numeric === 408 || numeric === 429) return numeric;
  return 502;
}
