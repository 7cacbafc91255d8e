import type { GatewayError } from '../../errors/gateway-error.js';
import { inBandErrorStatus } from '../in-band-error-status.js';
import { parseRetryAfter, UPSTREAM_TEXT_READ_LIMIT, upstreamFailureToError } from '../upstream-errors.js';
import type { OpenAIErrorWire } from './openai-wire-types.js';

/** Read limit of upstream error text: cut to its final length only after redaction (clientSafeUpstreamError). */
const MAX_MESSAGE = UPSTREAM_TEXT_READ_LIMIT;

/** Pull a message, code, type and param out of whatever error body a server sent. */
export function readOpenAIErrorBody(bodyText: string): { message: string; code: string | number | null; type: string | null; param: string | null } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    const text = bodyText.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
    return { message: text.slice(0, MAX_MESSAGE), code: null, type: null, param: null };
  }
  const obj = (parsed ?? {}) as Record<string, unknown>;
  const err = obj.error;
  if (typeof err === 'string') return { message: err.slice(0, MAX_MESSAGE), code: null, type: null, param: null };
  if (err && typeof err === 'object') {
    const e = err as OpenAIErrorWire;
    const raw = e.metadata && typeof e.metadata.raw === 'string' ? ` (${e.metadata.raw})` : '';
    return {
      message: `${String(e.message ?? 'upstream error')}${raw}`.slice(0, MAX_MESSAGE),
      code: typeof e.code === 'string' ? e.code.slice(0, MAX_MESSAGE) : typeof e.code === 'number' ? e.code : null,
      type: typeof e.type === 'string' ? e.type.slice(0, MAX_MESSAGE) : null,
      param: typeof e.param === 'string' ? e.param.slice(0, MAX_MESSAGE) : null,
    };
  }
  const message = typeof obj.message === 'string' ? obj.message : typeof obj.detail === 'string' ? obj.detail : bodyText;
  return { message: message.slice(0, MAX_MESSAGE), code: null, type: null, param: null };
}

/**
 * Turn a non-2xx response of an OpenAI-compatible server into a catalog error.
 * @see https://platform.openai.com/docs/guides/error-codes
 */
export function parseOpenAIErrorResponse(
  providerId: string,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  bodyText: string,
): GatewayError {
  const { message, code, type, param } = readOpenAIErrorBody(bodyText);
  return upstreamFailureToError({
    providerId,
    status,
    message,
    upstreamCode: code,
    upstreamType: type,
    param,
    retryAfterSeconds: parseRetryAfter(headers['retry-after']),
  });
}

/**
 * An error object inside a 200 response or stream event (`{"error": {...}}`), mapped through
 * the catalog by the upstream's own code or type ({@link inBandErrorStatus}).
 */
export function inBandOpenAIError(providerId: string, error: OpenAIErrorWire | string): GatewayError {
  const e: OpenAIErrorWire = typeof error === 'string' ? { message: error } : error;
  const message = String(e.message ?? 'error inside the upstream response');
  const retryAfter = typeof e.metadata?.retry_after_seconds === 'number' ? e.metadata.retry_after_seconds : undefined;
  return upstreamFailureToError({
    providerId,
    status: inBandErrorStatus({ code: e.code, type: e.type, message }),
    message,
    upstreamCode: typeof e.code === 'string' || typeof e.code === 'number' ? e.code : null,
    upstreamType: typeof e.type === 'string' ? e.type : null,
    param: e.param ?? null,
    retryAfterSeconds: retryAfter,
  });
}
