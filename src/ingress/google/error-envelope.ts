import type { GatewayError } from '../../errors/gateway-error.js';

/**
 * Google's canonical status name for an HTTP status (what Google's SDKs and the Gemini CLI read
 * in `error.status`): 400 INVALID_ARGUMENT (413 too), 401 UNAUTHENTICATED, 402/403
 * PERMISSION_DENIED, 404 NOT_FOUND, 405 UNIMPLEMENTED, 409 ABORTED, 429 RESOURCE_EXHAUSTED,
 * 499 CANCELLED, 501 UNIMPLEMENTED, 503 UNAVAILABLE, 504 DEADLINE_EXCEEDED, else INTERNAL.
 * @see https://cloud.google.com/apis/design/errors#handling_errors
 */
export function googleStatus(status: number): string {
  switch (status) {
    case 401:
      return 'UNAUTHENTICATED';
    case 402:
    case 403:
      return 'PERMISSION_DENIED';
    case 404:
      return 'NOT_FOUND';
    case 405:
    case 501:
      return 'UNIMPLEMENTED';
    case 409:
      return 'ABORTED';
    case 429:
      return 'RESOURCE_EXHAUSTED';
    case 499:
      return 'CANCELLED';
    case 503:
      return 'UNAVAILABLE';
    case 504:
      return 'DEADLINE_EXCEEDED';
    default:
      return status >= 400 && status < 500 ? 'INVALID_ARGUMENT' : 'INTERNAL';
  }
}

/** The body of a Gemini API error response (or an error element of a stream). */
export interface GoogleErrorBody {
  error: {
    code: number;
    message: string;
    status: string;
    details: Array<{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo'; reason: string; domain: string; metadata: Record<string, string> }>;
  };
}

/**
 * Google's error envelope `{error:{code, message, status, details}}`, with the gateway catalog's
 * `code` as the `reason` of a `google.rpc.ErrorInfo` detail (domain `opinference`), whose
 * `metadata` holds `request_id` and, when set, `param` (ErrorInfo metadata values are strings).
 * @see https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes
 */
export function geminiErrorBody(err: GatewayError, requestId: string): GoogleErrorBody {
  const metadata: Record<string, string> = { request_id: requestId };
  if (err.param) metadata.param = err.param;
  return {
    error: {
      code: err.status,
      message: err.message,
      status: googleStatus(err.status),
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: err.code, domain: 'opinference', metadata }],
    },
  };
}
