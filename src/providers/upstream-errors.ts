import { GatewayError } from '../errors/gateway-error.js';
import type { ErrorCode } from '../errors/catalog.js';

/** What an upstream said about a failure, provider-neutral. */
export interface UpstreamFailure {
  /** HTTP status of the upstream response (200 for an error inside a stream). */
  status: number;
  message: string;
  /** The upstream's own code or type, when it gave one (string or number). */
  upstreamCode?: string | number | null;
  param?: string | null;
  retryAfterSeconds?: number;
  providerId: string;
}

const CONTEXT_PATTERNS = [
  /context[ _-]?length/i,
  /context window/i,
  /maximum context/i,
  /too many tokens/i,
  /prompt is too long/i,
  /exceeds? the (model's )?(maximum|max) (input|context)/i,
];

/** Whether an upstream 4xx message says the prompt does not fit the context window. */
export function isContextLengthMessage(message: string, code?: string | number | null): boolean {
  if (code === 'context_length_exceeded') return true;
  return CONTEXT_PATTERNS.some((re) => re.test(message));
}

/**
 * Map an upstream failure to a catalog error by HTTP status (SPEC §2.3). The upstream message
 * is kept; the upstream status and code go into `metadata`.
 */
export function upstreamFailureToError(f: UpstreamFailure): GatewayError {
  const metadata: Record<string, unknown> = { provider: f.providerId, upstream_status: f.status };
  if (f.upstreamCode !== undefined && f.upstreamCode !== null) metadata.upstream_code = f.upstreamCode;
  const msg = f.message || `upstream answered HTTP ${f.status}`;
  let code: ErrorCode;
  let status: number | undefined;
  switch (true) {
    case f.status === 401 || f.status === 403:
      code = 'upstream_auth_failed';
      break;
    case f.status === 408:
      code = 'upstream_timeout';
      break;
    case f.status === 429:
      code = 'upstream_rate_limited';
      break;
    case f.status === 503 || f.status === 529:
      code = 'upstream_overloaded';
      break;
    case f.status === 504 || f.status === 524:
      code = 'upstream_timeout';
      break;
    case f.status === 404 || f.status === 409:
      // A missing upstream model or a conflict is the endpoint's problem, not the request's.
      code = 'upstream_error';
      break;
    case f.status >= 400 && f.status < 500:
      if (isContextLengthMessage(msg, f.upstreamCode)) {
        code = 'context_length_exceeded';
      } else {
        code = 'upstream_bad_request';
        status = f.status;
      }
      break;
    default:
      code = 'upstream_error';
  }
  return new GatewayError(code, `${f.providerId}: ${msg}`, {
    param: f.param ?? null,
    status,
    retryAfterSeconds: f.retryAfterSeconds,
    metadata,
  });
}

/** Parse `Retry-After` (seconds or an HTTP date) into whole seconds, or undefined. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Math.max(0, Math.ceil(Number(v)));
  const t = Date.parse(v);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, Math.ceil((t - now) / 1000));
}

/** Map a thrown network/timeout error of an upstream call to a catalog error. */
export function transportErrorToGatewayError(err: unknown, providerId: string): GatewayError {
  if (err instanceof GatewayError) return err;
  const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string } };
  const code = e?.code ?? e?.cause?.code ?? '';
  const metadata = { provider: providerId, transport_error: code || e?.name || 'unknown' };
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new GatewayError('upstream_timeout', `${providerId}: connect timeout`, { metadata, cause: err });
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new GatewayError('upstream_timeout', `${providerId}: no response within the first-token timeout`, { metadata, cause: err });
    case 'UND_ERR_BODY_TIMEOUT':
      return new GatewayError('upstream_timeout', `${providerId}: the response went silent longer than the idle timeout`, { metadata, cause: err });
    default:
      return new GatewayError('upstream_connection_failed', `${providerId}: ${e?.message || 'connection failed'}`, { metadata, cause: err });
  }
}
