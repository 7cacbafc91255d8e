import { GatewayError } from '../../errors/gateway-error.js';
import { parseRetryAfter, redactSecrets } from '../upstream-errors.js';
import { parseOpenAIErrorResponse, readOpenAIErrorBody } from '../openai/openai-error.js';
import type { AzureErrorWire } from './azure-wire-types.js';

/** "Please retry after 37 seconds" (Azure names the wait in the message of a 429). */
const RETRY_AFTER_IN_MESSAGE = /retry after (\d{1,5}) seconds?/i;

/**
 * The wait an Azure 429 asks for, in whole seconds: `retry-after-ms` (milliseconds, what
 * openai-node honours first), else `retry-after` (seconds or an HTTP date), else the seconds the
 * message names; undefined when none.
 */
export function azureRetryAfterSeconds(headers: Record<string, string | string[] | undefined>, message: string, now = Date.now()): number | undefined {
  const ms = Array.isArray(headers['retry-after-ms']) ? headers['retry-after-ms'][0] : headers['retry-after-ms'];
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.max(0, Math.ceil(Number(ms) / 1000));
  const header = parseRetryAfter(headers['retry-after'], now);
  if (header !== undefined) return header;
  const m = RETRY_AFTER_IN_MESSAGE.exec(message);
  return m ? Number(m[1]) : undefined;
}

/** The error object of an Azure error body, when it is JSON with one. */
function errorObject(bodyText: string): AzureErrorWire | undefined {
  try {
    const parsed = JSON.parse(bodyText) as { error?: unknown } | null;
    const e = parsed?.error;
    return e !== null && typeof e === 'object' ? (e as AzureErrorWire) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Turn a non-2xx Azure OpenAI response into a catalog error. A prompt the content filter blocked
 * (400, `code: "content_filter"`, or `innererror.code: "ResponsibleAIPolicyViolation"`) is
 * `content_filtered` (400, terminal: not retried on another endpoint of the model), its `param`
 * the upstream's (`prompt`) or `messages`, the filter's verdict in
 * `metadata.provider_metadata` (`content_filter_result`, and the Responses API's
 * `content_filters`), which the record keeps too. Everything else is the `openai` kind's mapping,
 * with a 429's wait read from `retry-after-ms`, `retry-after` or the message
 * ({@link azureRetryAfterSeconds}), so the endpoint cools for as long as Azure asked.
 * @see ../../../../shared/reference/cloud-providers.md §3.6, §3.7
 */
export function parseAzureErrorResponse(providerId: string, status: number, headers: Record<string, string | string[] | undefined>, bodyText: string): GatewayError {
  const e = errorObject(bodyText);
  if (status === 400 && e && (e.code === 'content_filter' || e.innererror?.code === 'ResponsibleAIPolicyViolation')) {
    const { message, type, param } = readOpenAIErrorBody(bodyText);
    const safe = redactSecrets(message);
    const providerMetadata: Record<string, unknown> = {};
    if (e.innererror?.content_filter_result) providerMetadata.content_filter_result = e.innererror.content_filter_result;
    if (Array.isArray(e.content_filters)) providerMetadata.content_filters = e.content_filters;
    return new GatewayError('content_filtered', `${providerId}: ${safe}`, {
      param: param ?? 'messages',
      metadata: { provider_name: providerId, upstream_status: status, upstream_code: 'content_filter', provider_metadata: providerMetadata },
      upstream: { status, code: 'content_filter', type, param, message: safe },
    });
  }
  const retryAfter = status === 429 ? azureRetryAfterSeconds(headers, readOpenAIErrorBody(bodyText).message) : undefined;
  return parseOpenAIErrorResponse(providerId, status, retryAfter === undefined ? headers : { ...headers, 'retry-after': String(retryAfter) }, bodyText);
}
