import { GatewayError, type UpstreamErrorInfo } from '../errors/gateway-error.js';
import type { ErrorCode } from '../errors/catalog.js';
import type { ProviderConfig } from '../config/schema.js';

/** What a secret is replaced with in upstream error text. */
export const REDACTED = '[redacted]';

/** Shortest configured value redacted by exact match (shorter ones are too likely to be ordinary words). */
const MIN_SECRET_LENGTH = 6;

/**
 * Credentials upstreams (or proxies in front of them) quote back in error messages: the value of
 * an `Authorization` / `Proxy-Authorization` / `x-api-key` / `x-goog-api-key` / `api-key` header
 * or JSON field, a `key=` query parameter, a bare bearer token, and well-known key shapes.
 */
const SECRET_PATTERNS: ReadonlyArray<[RegExp, string]> = [
  [/\b((?:proxy-)?authorization["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token)\s+)?[^\s"',;}]+/gi, `$1${REDACTED}`],
  [/\b((?:x-api-key|x-goog-api-key|api[-_]?key|access[-_]?token)["']?\s*[:=]\s*["']?)[^\s"',;}&]+/gi, `$1${REDACTED}`],
  [/([?&;](?:key|api_key|apikey|access_token|token)=)[^&\s"'<>#]+/gi, `$1${REDACTED}`],
  [/\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi, `$1${REDACTED}`],
  [/\b(?:sk|rk|pk)-[A-Za-z0-9_-]{16,}/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{30,}/g, REDACTED],
  [/\bya29\.[0-9A-Za-z._-]{8,}/g, REDACTED],
  // AWS: a session token quoted by name (header or query), and the shapes of STS session tokens.
  [/\b(x-amz-security-token["']?\s*[:=]\s*["']?)[^\s"',;}&]+/gi, `$1${REDACTED}`],
  [/\b(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz)[A-Za-z0-9+/=]{8,}/g, REDACTED],
];

/**
 * The values of a provider that must never reach a client, a log or the database: its `api_key`,
 * every key of its `api_keys` and the values of its configured `headers` (6 characters or longer).
 */
export function providerSecrets(provider: Pick<ProviderConfig, 'api_key' | 'headers'> & { api_keys?: ProviderConfig['api_keys'] }): string[] {
  const values = [provider.api_key ?? '', ...(provider.api_keys ?? []).map((k) => k.key), ...Object.values(provider.headers ?? {})];
  // Longest first: a key that contains another is replaced whole.
  return [...new Set(values.map((v) => v.replace(/^(bearer|basic)\s+/i, '').trim()).filter((v) => v.length >= MIN_SECRET_LENGTH))].sort((a, b) => b.length - a.length);
}

/**
 * Replace secrets in upstream error text with `[redacted]`: every exact occurrence of `secrets`
 * (a provider's configured key and header values) and every credential-shaped value
 * ({@link SECRET_PATTERNS}). The one scrubbing function of every upstream error path.
 */
export function redactSecrets(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= MIN_SECRET_LENGTH && out.includes(secret)) out = out.split(secret).join(REDACTED);
  for (const [re, replacement] of SECRET_PATTERNS) out = out.replace(re, replacement);
  return out;
}

/** Longest upstream error message relayed to a client or stored, in characters (after redaction). */
export const MAX_UPSTREAM_MESSAGE = 2000;

/** Longest upstream-provided short field (`param`, a code or type, a metadata value), in characters. */
export const MAX_UPSTREAM_FIELD = 256;

/**
 * How much of an upstream error text the adapters read before it reaches
 * {@link clientSafeUpstreamError}, in characters: far more than {@link MAX_UPSTREAM_MESSAGE}, so
 * that a secret crossing the final cut is still whole when it is redacted.
 */
export const UPSTREAM_TEXT_READ_LIMIT = 64 * 1024;

/** Shortest secret prefix at the end of a cut text that is redacted too. */
const MIN_SECRET_PREFIX = 8;

/**
 * Redact, then cut to `max` characters: redaction runs on the whole text, so a secret crossing the
 * cut is replaced before it can be cut in half, and a cut text that still ends with the first
 * 8 or more characters of a configured secret (an upstream that cut it itself) has that tail
 * replaced too.
 */
export function redactAndTruncate(text: string, secrets: readonly string[], max: number): string {
  const redacted = redactSecrets(text, secrets);
  if (redacted.length <= max) return redacted;
  let out = redacted.slice(0, max);
  for (const secret of secrets) {
    for (let k = Math.min(secret.length - 1, out.length); k >= MIN_SECRET_PREFIX; k--) {
      if (out.endsWith(secret.slice(0, k))) {
        out = out.slice(0, out.length - k) + REDACTED;
        break;
      }
    }
  }
  return out;
}

function redactValue(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === 'string') return redactAndTruncate(value, secrets, MAX_UPSTREAM_MESSAGE);
  if (Array.isArray(value)) return value.map((v) => redactValue(v, secrets));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactValue(v, secrets)]));
  return value;
}

/**
 * An upstream error as it may leave the gateway (to the client, the logs and the generation
 * record): secrets of the provider redacted in every upstream-derived string (the message,
 * `param`, and every metadata value such as `upstream_code`), each redacted first and then cut
 * (message to {@link MAX_UPSTREAM_MESSAGE}, `param` to {@link MAX_UPSTREAM_FIELD} characters), no
 * `<provider id>: ` prefix in the message, and the provider id in `metadata.provider_name`.
 */
export function clientSafeUpstreamError(err: GatewayError, provider: { id: string; secrets: readonly string[] }): GatewayError {
  const prefix = `${provider.id}: `;
  const unprefixed = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
  const message = redactAndTruncate(unprefixed, provider.secrets, MAX_UPSTREAM_MESSAGE);
  const param = typeof err.param === 'string' ? redactAndTruncate(err.param, provider.secrets, MAX_UPSTREAM_FIELD) : err.param;
  const { provider: _legacy, ...rest } = err.metadata ?? {};
  const metadata = { ...(redactValue(rest, provider.secrets) as Record<string, unknown>), provider_name: provider.id };
  const upstream = err.upstream && safeUpstreamInfo(err.upstream, provider.secrets);
  return new GatewayError(err.code, message, { param, status: err.status, retryAfterSeconds: err.retryAfterSeconds, metadata, upstream, cause: err.cause });
}

/** {@link UpstreamErrorInfo} with secrets redacted: the message cut to {@link MAX_UPSTREAM_MESSAGE}, the other strings to {@link MAX_UPSTREAM_FIELD}. */
function safeUpstreamInfo(u: UpstreamErrorInfo, secrets: readonly string[]): UpstreamErrorInfo {
  const field = (v: string | null) => (v === null ? null : redactAndTruncate(v, secrets, MAX_UPSTREAM_FIELD));
  return {
    status: u.status,
    code: typeof u.code === 'string' ? field(u.code) : u.code,
    type: field(u.type),
    param: field(u.param),
    message: redactAndTruncate(u.message, secrets, MAX_UPSTREAM_MESSAGE),
  };
}

/** What an upstream said about a failure, provider-neutral. */
export interface UpstreamFailure {
  /** HTTP status of the upstream response (200 for an error inside a stream). */
  status: number;
  message: string;
  /** The upstream's own error code, when it gave one (string or number). */
  upstreamCode?: string | number | null;
  /** The upstream's error type (OpenAI and Anthropic `error.type`, Gemini `status`), when it gave one. */
  upstreamType?: string | null;
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
 * is kept, with credentials redacted ({@link redactSecrets}); the provider id, upstream status
 * and code (else type) go into `metadata` (`provider_name`, `upstream_status`, `upstream_code`),
 * and everything the upstream said into the error's `upstream` (for the generation record).
 */
export function upstreamFailureToError(f: UpstreamFailure): GatewayError {
  const metadata: Record<string, unknown> = { provider_name: f.providerId, upstream_status: f.status };
  const upstreamCode = f.upstreamCode ?? f.upstreamType ?? null;
  if (upstreamCode !== null) metadata.upstream_code = typeof upstreamCode === 'string' ? redactSecrets(upstreamCode) : upstreamCode;
  const msg = redactSecrets(f.message || `upstream answered HTTP ${f.status}`);
  const upstream: UpstreamErrorInfo = {
    status: f.status,
    code: typeof f.upstreamCode === 'string' ? redactSecrets(f.upstreamCode) : (f.upstreamCode ?? null),
    type: typeof f.upstreamType === 'string' ? redactSecrets(f.upstreamType) : null,
    param: typeof f.param === 'string' ? redactSecrets(f.param) : null,
    message: msg,
  };
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
      if (isContextLengthMessage(msg, upstreamCode)) {
        code = 'context_length_exceeded';
      } else {
        code = 'upstream_bad_request';
        status = f.status;
      }
      break;
    default:
      code = 'upstream_error';
  }
  return new GatewayError(code, msg, {
    param: f.param ?? null,
    status,
    retryAfterSeconds: f.retryAfterSeconds,
    metadata,
    upstream,
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
  const metadata = { provider_name: providerId, transport_error: code || e?.name || 'unknown' };
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new GatewayError('upstream_timeout', 'the upstream did not accept the connection within the connect timeout', { metadata, cause: err });
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new GatewayError('upstream_timeout', 'no response within the first-token timeout', { metadata, cause: err });
    case 'UND_ERR_BODY_TIMEOUT':
      return new GatewayError('upstream_timeout', 'the response went silent longer than the idle timeout', { metadata, cause: err });
    default:
      return new GatewayError('upstream_connection_failed', redactSecrets(e?.message || 'connection failed'), { metadata, cause: err });
  }
}
