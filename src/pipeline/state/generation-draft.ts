import type { Usage } from '../../core/chat-types.js';
import type { GatewayError, UpstreamErrorInfo } from '../../errors/gateway-error.js';
import { MAX_UPSTREAM_FIELD } from '../../providers/upstream-errors.js';
import type { ClientApi } from '../../ingress/types.js';
import type { GenerationsTable } from '../../store/schema.js';

/** One upstream attempt of a generation. Times in ms. */
export interface Attempt {
  endpoint: string;
  provider: string;
  model: string;
  /** Upstream HTTP status, or null when no response arrived (connect error, timeout). */
  status: number | null;
  error_code: string | null;
  latency_ms: number;
  /** Why the router put this endpoint where it was (`provider.order`, `weighted-random` …). */
  reason: string;
}

/** The pass-through lane's answer as the client got it: the upstream's body, or its events (SSE text). */
export type RelayedAnswer = { body: unknown } | { events: string };

/**
 * The generation record while a request runs; {@link toRow} turns it into exactly one database
 * row when the request ends, however it ends.
 */
export class GenerationDraft {
  readonly createdAt = Date.now();
  readonly startedAt = performance.now();
  servedModel: string | null = null;
  provider: string | null = null;
  endpoint: string | null = null;
  upstreamModel: string | null = null;
  status: 'success' | 'error' | 'cancelled' = 'success';
  errorCode: string | null = null;
  /** The error's message as the client got it; it may quote the request, so the record keeps it only when retention keeps text. */
  errorMessage: string | null = null;
  /** The request field the error is about (the gateway's or the upstream's `param`). */
  errorParam: string | null = null;
  /** What the upstream said, when the error comes from an upstream's answer. */
  upstreamError: UpstreamErrorInfo | null = null;
  httpStatus = 200;
  finishReason: string | null = null;
  nativeFinishReason: string | null = null;
  cancelled = false;
  usage: Usage | null = null;
  costPico = 0n;
  ttftMs: number | null = null;
  readonly attempts: Attempt[] = [];
  dropped: string[] = [];
  /** Headers to send with the response (rate-limit state). */
  extraHeaders: Record<string, string> = {};
  /** Why the endpoint that answered was chosen. */
  routingReason: string | null = null;
  /** Conversion adjustments of the attempt that answered (clamped values …). */
  warnings: string[] = [];
  /** Request and output text, kept only when retention allows. */
  content: { request: unknown; output: unknown } | null = null;
  /** Answered from the response cache (cost 0). */
  cacheHit = false;
  /**
   * Set when the response cache will store this answer: the pass-through lane then keeps what
   * it relayed in {@link relayed}. Not part of the record.
   */
  keepRelayed = false;
  /**
   * What the pass-through lane sent the client as the answer (the upstream's own body, or its
   * events as SSE text), kept only with {@link keepRelayed}, for the response cache to replay.
   * Not part of the record.
   */
  relayed: RelayedAnswer | null = null;
  /**
   * The response cache entry of this request (its key and TTL in ms) when caching applies: a
   * stored response names it, so deleting the response deletes the entry. Not part of the record.
   */
  cachePlan: { key: string; ttlMs: number } | undefined = undefined;
  /** The answer was already written to the response cache (before its stored response). Not part of the record. */
  cacheStored = false;

  constructor(
    readonly id: string,
    readonly requestId: string,
    readonly keyId: string | null,
    readonly api: ClientApi,
    readonly streamed: boolean,
    public requestedModel: string,
    public tags: string[] = [],
    public session: string | null = null,
    public retention: 'none' | number = 'none',
  ) {}

  /** Milliseconds since the request started. */
  elapsed(): number {
    return Math.round(performance.now() - this.startedAt);
  }

  markFirstToken(): void {
    if (this.ttftMs === null) this.ttftMs = this.elapsed();
  }

  /** End the generation as failed with `err`: its code, message, field and what the upstream said. */
  fail(err: GatewayError): void {
    this.status = 'error';
    this.errorCode = err.code;
    this.errorMessage = err.message;
    this.errorParam = err.param;
    this.upstreamError = err.upstream ?? null;
  }

  /** End the generation as cancelled by the client: `client_closed_request`, HTTP status 499 (nginx's "client closed request"). */
  cancel(): void {
    this.status = 'cancelled';
    this.cancelled = true;
    this.errorCode = 'client_closed_request';
    this.httpStatus = 499;
  }

  /**
   * The database row. Text goes in only when retention is not `none`: the request and output
   * (`content`) and the error message (`error_message`, which may quote the request). A failed
   * generation always keeps `detail.error`: the error's `param` and the upstream's status, code,
   * type and param (no text of the request); the upstream's message too with
   * `keepUpstreamErrorMessage` (`records.keep_upstream_error_message`), whatever the retention.
   */
  toRow(keepUpstreamErrorMessage = false): GenerationsTable {
    const u = this.usage;
    const detail: Record<string, unknown> = { attempts: this.attempts, routing_reason: this.routingReason, dropped_parameters: this.dropped, warnings: this.warnings };
    if (this.cacheHit) detail.cache_hit = true;
    if (this.errorCode !== null && this.status === 'error') detail.error = this.errorDetail(keepUpstreamErrorMessage);
    return {
      id: this.id,
      request_id: this.requestId,
      created_at: this.createdAt,
      key_id: this.keyId,
      requested_model: this.requestedModel,
      served_model: this.servedModel,
      provider: this.provider,
      endpoint: this.endpoint,
      upstream_model: this.upstreamModel,
      status: this.status,
      error_code: this.errorCode,
      error_message: this.retention === 'none' ? null : this.errorMessage,
      http_status: this.httpStatus,
      finish_reason: this.finishReason,
      native_finish_reason: this.nativeFinishReason,
      api: this.api,
      streamed: this.streamed ? 1 : 0,
      cancelled: this.cancelled ? 1 : 0,
      prompt_tokens: u?.promptTokens ?? null,
      completion_tokens: u?.completionTokens ?? null,
      reasoning_tokens: u?.reasoningTokens ?? null,
      cached_tokens: u?.cachedTokens ?? null,
      cache_write_tokens: u?.cacheWriteTokens ?? null,
      usage_source: u?.source ?? null,
      cost_pico: this.costPico,
      latency_ms: this.elapsed(),
      ttft_ms: this.ttftMs,
      tags: this.tags.length === 0 ? '[]' : JSON.stringify(this.tags),
      session: this.session,
      retention: String(this.retention),
      detail: JSON.stringify(detail),
      content: this.retention === 'none' || this.content === null ? null : JSON.stringify(this.content),
    };
  }

  private errorDetail(keepUpstreamMessage: boolean): RecordedError {
    const cut = (v: string | null) => (v === null ? null : v.slice(0, MAX_UPSTREAM_FIELD));
    const up = this.upstreamError;
    return {
      param: cut(this.errorParam),
      upstream: up
        ? { status: up.status, code: typeof up.code === 'string' ? cut(up.code) : up.code, type: cut(up.type), param: cut(up.param), ...(keepUpstreamMessage ? { message: up.message } : {}) }
        : null,
    };
  }
}

/**
 * `detail.error` of a failed generation's record: what is kept of the failure under every
 * retention (see docs/records.md, "Why a request failed"). Strings at most 256 characters
 * (the message 2,000), secrets redacted.
 */
export interface RecordedError {
  /** The request field the error is about, in dotted form (`messages[2].content`), or null. */
  param: string | null;
  /** What the upstream said, when an upstream's answer caused the error; else null. */
  upstream: {
    /** HTTP status of the upstream response (200 for an error inside a response or stream). */
    status: number;
    code: string | number | null;
    type: string | null;
    param: string | null;
    /** Only with `records.keep_upstream_error_message: true`. */
    message?: string;
  } | null;
}
