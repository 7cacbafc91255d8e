import { ERROR_CATALOG, type ErrorCode, type ErrorKind, type ErrorScope, type OpenAIErrorType } from './catalog.js';

/** Wire shape of an error: the seed-003 envelope's `error` object. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  kind: ErrorKind;
  scope: ErrorScope;
  type: OpenAIErrorType;
  param: string | null;
  request_id?: string;
  /** Extra facts for operators (upstream status, provider id, attempts …). */
  metadata?: Record<string, unknown>;
}

/**
 * What an upstream said about a failure, as the gateway read it from the upstream's error body
 * or event. Not part of the wire envelope (its code goes out as `metadata.upstream_code`); the
 * generation record keeps it (see docs/records.md, "Why a request failed").
 */
export interface UpstreamErrorInfo {
  /** HTTP status of the upstream response (200 for an error inside a response or stream). */
  status: number;
  /** The upstream's error code (OpenAI `error.code`, Gemini's `ErrorInfo.reason`), or null. */
  code: string | number | null;
  /** The upstream's error type (OpenAI and Anthropic `error.type`, Gemini `error.status`), or null. */
  type: string | null;
  /** The request field the upstream named (OpenAI `error.param`), or null. */
  param: string | null;
  /** The upstream's message. It may quote the request, so records keep it only as retention or `records.keep_upstream_error_message` allow. */
  message: string;
}

/** Options of {@link GatewayError}. */
export interface GatewayErrorOptions {
  /** The request field the error is about, in dotted form (`messages[2].content`). */
  param?: string | null;
  /** Overrides the catalog status (e.g. an upstream 4xx passed on with its own status). */
  status?: number;
  /** Seconds the client should wait before retrying (sent as `Retry-After`). */
  retryAfterSeconds?: number;
  metadata?: Record<string, unknown>;
  /** What the upstream said, when the error comes from an upstream's answer. */
  upstream?: UpstreamErrorInfo;
  cause?: unknown;
}

/**
 * An error with a catalog code. Everything the gateway throws on purpose is one of these;
 * anything else becomes `internal_error` at the edge.
 */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly param: string | null;
  readonly retryAfterSeconds: number | undefined;
  readonly metadata: Record<string, unknown> | undefined;
  /** What the upstream said, when the error comes from an upstream's answer (not sent to the client as such). */
  readonly upstream: UpstreamErrorInfo | undefined;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = options.status ?? ERROR_CATALOG[code].status;
    this.param = options.param ?? null;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.metadata = options.metadata;
    this.upstream = options.upstream;
  }

  get kind(): ErrorKind {
    return ERROR_CATALOG[this.code].kind;
  }

  get scope(): ErrorScope {
    return ERROR_CATALOG[this.code].scope;
  }

  /** Whether a router may try another endpoint after this failure. */
  get retryable(): boolean {
    return this.kind === 'retryable';
  }

  /** The `error` object of the envelope. */
  toBody(requestId?: string): ErrorBody {
    const def = ERROR_CATALOG[this.code];
    const body: ErrorBody = {
      code: this.code,
      message: this.message,
      kind: def.kind,
      scope: def.scope,
      type: def.type,
      param: this.param,
    };
    if (requestId !== undefined) body.request_id = requestId;
    if (this.metadata !== undefined) body.metadata = this.metadata;
    return body;
  }
}

/** Wrap anything thrown into a GatewayError (unknown errors become `internal_error`). */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError('internal_error', 'internal error in the gateway', { cause: err });
}
