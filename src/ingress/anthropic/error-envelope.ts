import type { GatewayError } from '../../errors/gateway-error.js';
import type { AnthropicErrorType } from '../../providers/anthropic/anthropic-error.js';

/**
 * Anthropic's error type for a catalog error, by its HTTP status (what Anthropic's SDKs and
 * Claude Code switch on): 400/405/415 → invalid_request_error, 401 → authentication_error,
 * 402 → billing_error, 403 → permission_error, 404 → not_found_error, 413 → request_too_large,
 * 429 → rate_limit_error, 503/529 → overloaded_error, 504 → timeout_error, else api_error.
 */
export function anthropicErrorType(status: number): AnthropicErrorType {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    case 504:
      return 'timeout_error';
    default:
      return status >= 400 && status < 500 ? 'invalid_request_error' : 'api_error';
  }
}

/** The body of an Anthropic error response or `error` stream event. */
export interface AnthropicErrorBody {
  type: 'error';
  error: { type: AnthropicErrorType; message: string; code: string; param?: string; metadata?: Record<string, unknown> };
  request_id: string;
}

/**
 * Anthropic's error envelope `{type:"error", error:{type, message}, request_id}`, with the
 * gateway catalog's `code` (and `param`, `metadata` when set) kept inside `error`.
 * @see https://docs.anthropic.com/en/api/errors#error-shapes
 */
export function anthropicErrorBody(err: GatewayError, requestId: string): AnthropicErrorBody {
  const error: AnthropicErrorBody['error'] = { type: anthropicErrorType(err.status), message: err.message, code: err.code };
  if (err.param) error.param = err.param;
  if (err.metadata !== undefined) error.metadata = err.metadata;
  return { type: 'error', error, request_id: requestId };
}
