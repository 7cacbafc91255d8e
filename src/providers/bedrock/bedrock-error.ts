import type { GatewayError } from '../../errors/gateway-error.js';
import { parseRetryAfter, UPSTREAM_TEXT_READ_LIMIT, upstreamFailureToError } from '../upstream-errors.js';

/** Read limit of upstream error text: cut to its final length only after redaction (clientSafeUpstreamError). */
const MAX_MESSAGE = UPSTREAM_TEXT_READ_LIMIT;

/**
 * The status the gateway maps each Bedrock exception by (upstream-errors.ts `upstreamFailureToError`),
 * where it differs from, or is not given by, the HTTP status it comes with:
 *
 * | exception | HTTP | mapped as | catalog code |
 * |---|---|---|---|
 * | ThrottlingException, ModelNotReadyException, ServiceQuotaExceededException | 429 / 429 / 400 | 429 | upstream_rate_limited (retryable, fails over) |
 * | ValidationException | 400 | 400 | upstream_bad_request (terminal); context_length_exceeded for "Input is too long" |
 * | AccessDeniedException, UnrecognizedClientException, InvalidSignatureException, ExpiredTokenException, IncompleteSignatureException, MissingAuthenticationTokenException | 403 | 403 | upstream_auth_failed |
 * | ModelTimeoutException | 408 | 408 | upstream_timeout |
 * | ModelErrorException, ModelStreamErrorException, InternalServerException | 424 / 424 / 500 | 500 | upstream_error (fails over) |
 * | ServiceUnavailableException | 503 | 503 | upstream_overloaded |
 * | ResourceNotFoundException | 404 | 404 | upstream_error (the model is missing in that region: fails over) |
 *
 * A ServiceQuotaExceededException is a quota of the account in one region, not a bad request:
 * another endpoint (region, account) may serve it. ModelErrorException /
 * ModelStreamErrorException are the model's own failure (a 424 would read as a terminal 4xx).
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html#API_runtime_Converse_Errors
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html
 */
export const BEDROCK_EXCEPTION_STATUS: Readonly<Record<string, number>> = Object.freeze({
  ThrottlingException: 429,
  ModelNotReadyException: 429,
  ServiceQuotaExceededException: 429,
  ValidationException: 400,
  ConflictException: 409,
  AccessDeniedException: 403,
  UnrecognizedClientException: 403,
  InvalidSignatureException: 403,
  ExpiredTokenException: 403,
  IncompleteSignatureException: 403,
  MissingAuthenticationTokenException: 403,
  ResourceNotFoundException: 404,
  ModelTimeoutException: 408,
  ModelErrorException: 500,
  ModelStreamErrorException: 500,
  InternalServerException: 500,
  ServiceUnavailableException: 503,
});

/** Bedrock's own words for a prompt over the context window. */
const CONTEXT_MESSAGES = [/input is too long/i, /too many input tokens/i, /prompt is too long/i, /exceeds? the (model's )?(maximum|max)/i];

/**
 * An exception name as the AWS SDK reads it: `x-amzn-ErrorType: Name:http://internal…` is cut at
 * `:`, `aws.protocols#Name` after `#`. Null for nothing usable.
 */
export function bedrockExceptionName(raw: unknown): string | null {
  if (typeof raw !== 'string' || raw === '') return null;
  const name = raw.split(':')[0]!.split('#').at(-1)!.trim();
  return /^[A-Za-z]+$/.test(name) ? name : null;
}

/** The exception name a stream frame's `:exception-type` carries (`throttlingException`), in the HTTP form (`ThrottlingException`). */
export function streamExceptionName(eventType: string): string {
  return eventType.charAt(0).toUpperCase() + eventType.slice(1);
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** What an error body says: its `message` (`Message` too), and the exception name in `__type` / `code`, if any. */
function readBody(bodyText: string): { message: string; name: string | null; extra: Record<string, unknown> } {
  try {
    const parsed = JSON.parse(bodyText) as Record<string, unknown> | null;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const message = typeof parsed.message === 'string' ? parsed.message : typeof parsed.Message === 'string' ? parsed.Message : bodyText;
      const extra: Record<string, unknown> = {};
      if (typeof parsed.originalStatusCode === 'number') extra.upstream_original_status = parsed.originalStatusCode;
      if (typeof parsed.resourceName === 'string') extra.upstream_resource = parsed.resourceName;
      return { message: message.slice(0, MAX_MESSAGE), name: bedrockExceptionName(parsed.__type) ?? bedrockExceptionName(parsed.code), extra };
    }
  } catch {
    // not JSON: the text as it came (an HTML page from a proxy: tags stripped)
  }
  return { message: bodyText.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, MAX_MESSAGE), name: null, extra: {} };
}

/** Build the catalog error of a Bedrock exception (`name` null: by `httpStatus` alone). */
function bedrockFailure(providerId: string, httpStatus: number, name: string | null, message: string, extra: Record<string, unknown>, retryAfterSeconds?: number): GatewayError {
  const status = (name !== null ? BEDROCK_EXCEPTION_STATUS[name] : undefined) ?? httpStatus;
  const context = status === 400 && CONTEXT_MESSAGES.some((re) => re.test(message));
  const err = upstreamFailureToError({
    providerId,
    status,
    message: message || (name ?? `upstream answered HTTP ${httpStatus}`),
    upstreamCode: context ? 'context_length_exceeded' : name,
    upstreamType: name,
    retryAfterSeconds,
  });
  if (err.metadata) {
    if (context && name) err.metadata.upstream_code = name;
    if (httpStatus !== status) err.metadata.upstream_status = httpStatus;
    Object.assign(err.metadata, extra);
  }
  return err;
}

/**
 * Turn a non-2xx Bedrock Runtime response into a catalog error: the exception name from the
 * `x-amzn-ErrorType` header (else the body's `__type` / `code`), the message from the body's
 * `message`, mapped per {@link BEDROCK_EXCEPTION_STATUS}; the exception name goes into
 * `metadata.upstream_code`, the AWS request id (`x-amzn-RequestId`) into
 * `metadata.aws_request_id` (kept in the generation record's error), a `Retry-After` header is
 * read.
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html
 */
export function parseBedrockErrorResponse(providerId: string, status: number, headers: Record<string, string | string[] | undefined>, bodyText: string): GatewayError {
  const body = readBody(bodyText);
  const name = bedrockExceptionName(first(headers['x-amzn-errortype'])) ?? body.name;
  const requestId = first(headers['x-amzn-requestid']);
  // The request id also as provider metadata: a failed generation's record keeps it (detail.provider_metadata).
  const extra = { ...body.extra, ...(requestId ? { aws_request_id: requestId, provider_metadata: { aws_request_id: requestId } } : {}) };
  return bedrockFailure(providerId, status, name, body.message, extra, parseRetryAfter(headers['retry-after']));
}

/**
 * An exception inside a 200 ConverseStream (an event-stream frame with `:message-type:
 * exception`, its `:exception-type` such as `throttlingException`, `modelStreamErrorException`,
 * and a JSON payload `{message, originalStatusCode?, originalMessage?}`), mapped as the same
 * exception over HTTP would be.
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html
 */
export function inStreamBedrockError(providerId: string, exceptionType: string, payload: { message?: unknown; originalStatusCode?: unknown; originalMessage?: unknown } | null): GatewayError {
  const name = streamExceptionName(exceptionType);
  const extra: Record<string, unknown> = { in_stream: true };
  if (typeof payload?.originalStatusCode === 'number') extra.upstream_original_status = payload.originalStatusCode;
  const message = typeof payload?.message === 'string' ? payload.message : typeof payload?.originalMessage === 'string' ? payload.originalMessage : name;
  return bedrockFailure(providerId, 200, name, message.slice(0, MAX_MESSAGE), extra);
}
