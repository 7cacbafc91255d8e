import type { GatewayError } from '../../errors/gateway-error.js';
import { parseRetryAfter, UPSTREAM_TEXT_READ_LIMIT, upstreamFailureToError } from '../upstream-errors.js';
import type { AnthropicErrorWire } from './anthropic-wire-types.js';

/** Read limit of upstream error text: cut to its final length only after redaction (clientSafeUpstreamError). */
const MAX_MESSAGE = UPSTREAM_TEXT_READ_LIMIT;

/** Anthropic error `type` values and the HTTP status each one comes with. */
export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'billing_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'timeout_error'
  | 'overloaded_error';

const ERROR_TYPES: ReadonlySet<string> = new Set<AnthropicErrorType>([
  'invalid_request_error', 'authentication_error', 'billing_error', 'permission_error', 'not_found_error',
  'request_too_large', 'rate_limit_error', 'api_error', 'timeout_error', 'overloaded_error',
]);

/**
 * The HTTP status Anthropic documents for an error `type` (used for errors that arrive inside
 * a 200 stream, which carry only the type). Unknown types count as 500.
 * @see https://docs.anthropic.com/en/api/errors
 */
export function statusForAnthropicErrorType(type: string | null | undefined): number {
  if (typeof type !== 'string' || !ERROR_TYPES.has(type)) return 500;
  const t = type as AnthropicErrorType;
  switch (t) {
    case 'invalid_request_error':
      return 400;
    case 'authentication_error':
      return 401;
    case 'billing_error':
      return 402;
    case 'permission_error':
      return 403;
    case 'not_found_error':
      return 404;
    case 'request_too_large':
      return 413;
    case 'rate_limit_error':
      return 429;
    case 'api_error':
      return 500;
    case 'timeout_error':
      return 504;
    case 'overloaded_error':
      return 529;
    default: {
      const unreachable: never = t;
      return unreachable;
    }
  }
}

/**
 * Read an error body: Anthropic's `{"type":"error","error":{"type","message"},"request_id"}`,
 * any other JSON with a message, or a non-JSON body (an HTML page from a proxy: tags stripped).
 * @returns the message (at most 2000 characters) and the Anthropic error type, when given.
 */
export function readAnthropicErrorBody(bodyText: string): { message: string; type: string | null } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    const text = bodyText.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
    return { message: text.slice(0, MAX_MESSAGE), type: null };
  }
  const obj = (parsed && typeof parsed === 'object' ? parsed : {}) as Record<string, unknown>;
  const err = obj.error;
  if (typeof err === 'string') return { message: err.slice(0, MAX_MESSAGE), type: null };
  if (err && typeof err === 'object') {
    const e = err as AnthropicErrorWire;
    return { message: String(e.message ?? 'upstream error').slice(0, MAX_MESSAGE), type: typeof e.type === 'string' ? e.type : null };
  }
  const message = typeof obj.message === 'string' ? obj.message : bodyText;
  return { message: message.slice(0, MAX_MESSAGE), type: null };
}

/**
 * Turn a non-2xx Messages API response into a catalog error, by status (529 → upstream_overloaded,
 * 401/403 → upstream_auth_failed, 429 → upstream_rate_limited with `retry-after`, "prompt is too
 * long" → context_length_exceeded, other 4xx → upstream_bad_request with the upstream status …).
 * The upstream message is kept; its error type goes into `metadata.upstream_code`.
 * @see https://docs.anthropic.com/en/api/errors
 */
export function parseAnthropicErrorResponse(
  providerId: string,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  bodyText: string,
): GatewayError {
  const { message, type } = readAnthropicErrorBody(bodyText);
  return upstreamFailureToError({
    providerId,
    status,
    message,
    upstreamType: type,
    retryAfterSeconds: parseRetryAfter(headers['retry-after']),
  });
}

/**
 * An error inside a 200 response: a stream `error` event (e.g. `overloaded_error` mid-stream)
 * or an error body. The status comes from the error type.
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming#error-events
 */
export function inBandAnthropicError(providerId: string, error: AnthropicErrorWire | null | undefined): GatewayError {
  const type = typeof error?.type === 'string' ? error.type : null;
  return upstreamFailureToError({
    providerId,
    status: statusForAnthropicErrorType(type),
    message: String(error?.message ?? 'error inside the upstream response').slice(0, MAX_MESSAGE),
    upstreamType: type,
  });
}
