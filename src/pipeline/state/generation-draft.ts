import type { Usage } from '../../core/chat-types.js';
import type { GatewayError, UpstreamErrorInfo } from '../../errors/gateway-error.js';
import type { ClientApi } from '../../ingress/types.js';
import type { GenerationRecord, RecordedAttempt } from '../../store/generation-row.js';
import type { GenerationsTable } from '../../store/schema.js';

/** The pass-through lane's answer as the client got it: the upstream's body, or its events (SSE text). */
export type RelayedAnswer = { body: unknown } | { events: string };

/**
 * The generation record while a request runs; the store's `generationRow`
 * (store/generation-row.ts) turns it into exactly one database row when the request ends,
 * however it ends (stages/finish.ts).
 */
export class GenerationDraft implements GenerationRecord {
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
  readonly attempts: RecordedAttempt[] = [];
  dropped: string[] = [];
  /** Headers to send with the response (rate-limit state). */
  extraHeaders: Record<string, string> = {};
  /** Why the endpoint that answered was chosen. */
  routingReason: string | null = null;
  /** The label of the `api_keys` entry of the last attempt (the one that served, on success), or null (a provider with one key). */
  credential: string | null = null;
  /** Conversion adjustments of the attempt that answered (clamped values …). */
  warnings: string[] = [];
  /**
   * What the upstream said beyond the generation (Azure's content-filter results): from the
   * answering attempt's result or stream, or a failure's `metadata.provider_metadata`.
   */
  providerMetadata: Record<string, unknown> | null = null;
  /** Request and output text, kept only when retention allows. */
  content: { request: unknown; output: unknown } | null = null;
  /** The app's end user as the record keeps it (store/end-users.ts `recordedEndUser`), or null. */
  endUser: string | null = null;
  /** The batch line this generation runs (its batch id and `custom_id`); null for every other request. */
  batch: { readonly batchId: string; readonly customId: string } | null = null;
  /**
   * Where the record goes instead of the record writer: a batch line's worker writes it in the
   * same transaction as the line's result (pipeline/batches/). Not part of the record.
   */
  captureRow: ((row: GenerationsTable) => void) | null = null;
  /**
   * Limit store ids whose token-per-minute windows count this request's tokens besides the
   * key's (its team's, its end user's: set by the admit stage). Not part of the record.
   */
  tokenWindows: string[] | undefined = undefined;
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

  /** End the generation as failed with `err`: its code, message, field, what the upstream said and its `metadata.provider_metadata`. */
  fail(err: GatewayError): void {
    const meta = err.metadata?.provider_metadata;
    if (meta !== null && typeof meta === 'object') this.providerMetadata = meta as Record<string, unknown>;
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
}
