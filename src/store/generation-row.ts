import type { ClientApi } from '../core/client-api.js';
import type { Usage } from '../core/chat-types.js';
import type { UpstreamErrorInfo } from '../errors/gateway-error.js';
import { MAX_UPSTREAM_FIELD } from '../providers/upstream-errors.js';
import type { GenerationsTable } from './schema.js';

/**
 * A generation record as the store writes it: {@link generationRow} turns what the pipeline
 * gathered while a request ran (`pipeline/state/generation-draft.ts` implements
 * {@link GenerationRecord}) into the one `generations` row.
 */

/** One upstream attempt of a generation, as `detail.attempts` keeps it. Times in ms. */
export interface RecordedAttempt {
  endpoint: string;
  provider: string;
  model: string;
  /** Upstream HTTP status, or null when no response arrived (connect error, timeout). */
  status: number | null;
  error_code: string | null;
  latency_ms: number;
  /** Why the router put this endpoint where it was (`provider.order`, `weighted-random` …). */
  reason: string;
  /** The label of the provider's `api_keys` entry the attempt used (never the key); absent for a provider with one `api_key`. */
  credential?: string;
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

/** What a generation's row is made of: the fields {@link generationRow} reads. Times are unix ms / durations ms. */
export interface GenerationRecord {
  readonly id: string;
  readonly requestId: string;
  /** Unix ms when the request arrived. */
  readonly createdAt: number;
  /** The client key's id; null for the admin key. */
  readonly keyId: string | null;
  readonly api: ClientApi;
  readonly streamed: boolean;
  readonly requestedModel: string;
  readonly servedModel: string | null;
  readonly provider: string | null;
  readonly endpoint: string | null;
  readonly upstreamModel: string | null;
  readonly status: 'success' | 'error' | 'cancelled';
  readonly errorCode: string | null;
  /** The error's message as the client got it; in the row only when retention keeps text. */
  readonly errorMessage: string | null;
  /** The request field the error is about. */
  readonly errorParam: string | null;
  /** What the upstream said, when the error comes from an upstream's answer. */
  readonly upstreamError: UpstreamErrorInfo | null;
  readonly httpStatus: number;
  readonly finishReason: string | null;
  readonly nativeFinishReason: string | null;
  readonly cancelled: boolean;
  /** null: nothing was metered (the token columns are null). */
  readonly usage: Usage | null;
  /** Picodollars (1e-12 USD). */
  readonly costPico: bigint;
  /** Time to the first token in ms, or null. */
  readonly ttftMs: number | null;
  readonly attempts: readonly RecordedAttempt[];
  /** Request parameters the upstream call dropped. */
  readonly dropped: readonly string[];
  readonly routingReason: string | null;
  /** The label of the provider's `api_keys` entry of the last attempt (the one that served, on success); null or absent without `api_keys`. */
  readonly credential?: string | null;
  readonly warnings: readonly string[];
  /** What the upstream said beyond the generation (Azure's content-filter results), or null. */
  readonly providerMetadata: Readonly<Record<string, unknown>> | null;
  readonly cacheHit: boolean;
  readonly tags: readonly string[];
  readonly session: string | null;
  /** The app's end user as the row keeps it (store/end-users.ts `recordedEndUser`), or null; absent is null. */
  readonly endUser?: string | null;
  /** The batch and line (`custom_id`) a batch line's generation ran for; absent for other requests. */
  readonly batch?: { readonly batchId: string; readonly customId: string } | null;
  /** `none`, or the days text is kept. */
  readonly retention: 'none' | number;
  /** Request and output text; in the row only when retention is not `none`. */
  readonly content: { request: unknown; output: unknown } | null;
  /** Milliseconds since the request started: the row's `latency_ms`, read when the row is made. */
  elapsed(): number;
}

/**
 * The database row of a generation. Text goes in only when retention is not `none`: the request
 * and output (`content`) and the error message (`error_message`, which may quote the request). A
 * failed generation always keeps `detail.error` ({@link RecordedError}): the error's `param` and
 * the upstream's status, code, type and param (no text of the request); the upstream's message
 * too with `keepUpstreamErrorMessage` (`records.keep_upstream_error_message`), whatever the
 * retention. `detail` is JSON of `attempts`, `routing_reason`, `dropped_parameters`, `warnings`,
 * then `credential` (the `api_keys` label that served) when the provider has several keys, `provider_metadata` when the upstream gave some (Azure's content-filter results),
 * `cache_hit: true` on a cache hit and `error` on a failure, in that order.
 */
export function generationRow(record: GenerationRecord, keepUpstreamErrorMessage: boolean): GenerationsTable {
  const u = record.usage;
  const detail: Record<string, unknown> = { attempts: record.attempts, routing_reason: record.routingReason, dropped_parameters: record.dropped, warnings: record.warnings };
  if (record.credential != null) detail.credential = record.credential;
  if (record.providerMetadata !== null) detail.provider_metadata = record.providerMetadata;
  if (record.cacheHit) detail.cache_hit = true;
  if (record.errorCode !== null && record.status === 'error') detail.error = recordedError(record, keepUpstreamErrorMessage);
  return {
    id: record.id,
    request_id: record.requestId,
    created_at: record.createdAt,
    key_id: record.keyId,
    requested_model: record.requestedModel,
    served_model: record.servedModel,
    provider: record.provider,
    endpoint: record.endpoint,
    upstream_model: record.upstreamModel,
    status: record.status,
    error_code: record.errorCode,
    error_message: record.retention === 'none' ? null : record.errorMessage,
    http_status: record.httpStatus,
    finish_reason: record.finishReason,
    native_finish_reason: record.nativeFinishReason,
    api: record.api,
    streamed: record.streamed ? 1 : 0,
    cancelled: record.cancelled ? 1 : 0,
    prompt_tokens: u?.promptTokens ?? null,
    completion_tokens: u?.completionTokens ?? null,
    reasoning_tokens: u?.reasoningTokens ?? null,
    cached_tokens: u?.cachedTokens ?? null,
    cache_write_tokens: u?.cacheWriteTokens ?? null,
    usage_source: u?.source ?? null,
    cost_pico: record.costPico,
    latency_ms: record.elapsed(),
    ttft_ms: record.ttftMs,
    tags: record.tags.length === 0 ? '[]' : JSON.stringify(record.tags),
    session: record.session,
    end_user: record.endUser ?? null,
    batch_id: record.batch?.batchId ?? null,
    custom_id: record.batch?.customId ?? null,
    retention: String(record.retention),
    detail: JSON.stringify(detail),
    content: record.retention === 'none' || record.content === null ? null : JSON.stringify(record.content),
  };
}

/**
 * `detail.error` of a failed record: `param` and the upstream's strings cut to
 * {@link MAX_UPSTREAM_FIELD} characters (a numeric upstream code kept as is); the upstream's
 * message only with `keepUpstreamMessage`.
 */
function recordedError(record: GenerationRecord, keepUpstreamMessage: boolean): RecordedError {
  const cut = (v: string | null) => (v === null ? null : v.slice(0, MAX_UPSTREAM_FIELD));
  const up = record.upstreamError;
  return {
    param: cut(record.errorParam),
    upstream: up
      ? { status: up.status, code: typeof up.code === 'string' ? cut(up.code) : up.code, type: cut(up.type), param: cut(up.param), ...(keepUpstreamMessage ? { message: up.message } : {}) }
      : null,
  };
}
