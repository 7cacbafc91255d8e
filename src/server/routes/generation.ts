import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { picoToUsdString } from '../../accounting/cost.js';
import { ERROR_CATALOG, type ErrorCode } from '../../errors/catalog.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import type { Database, GenerationsTable } from '../../store/schema.js';
import { findGeneration } from '../../store/generation-lookup.js';
import type { RecordedError } from '../../store/generation-row.js';
import { getKey, type ApiKey } from '../../store/keys.js';
import { isRefusal } from '../../store/refusal.js';
import { keyInScope, teamScope } from '../sso/roles.js';
import type { Session } from '../sso/session-cookie.js';

/**
 * Why a generation failed, in words: the message the client got when the record kept it
 * (retention keeps text), else the catalog's fixed text for the error code (no request content).
 */
function errorMessageOf(row: GenerationsTable): string | null {
  if (row.error_message !== null) return row.error_message;
  if (row.error_code === null || !Object.hasOwn(ERROR_CATALOG, row.error_code)) return null;
  return ERROR_CATALOG[row.error_code as ErrorCode].description;
}

/** The public shape of a generation record (`GET /v1/generation`), OpenRouter's field names where they exist. */
export function generationObject(row: GenerationsTable) {
  const detail = JSON.parse(row.detail) as { attempts: unknown[]; dropped_parameters: string[]; warnings?: string[]; routing_reason?: string | null; cache_hit?: boolean; error?: RecordedError; provider_metadata?: Record<string, unknown>; credential?: string };
  return {
    id: row.id,
    request_id: row.request_id,
    created_at: new Date(Number(row.created_at)).toISOString(),
    api_key_id: row.key_id,
    model: row.served_model ?? row.requested_model,
    requested_model: row.requested_model,
    provider_name: row.provider,
    endpoint: row.endpoint,
    upstream_model: row.upstream_model,
    status: row.status,
    /** An error that is the client's own (invalid, over a limit, unknown model; no provider answered): counted under `refused`, not `errors`. */
    refused: isRefusal(row),
    error_code: row.error_code,
    error_message: errorMessageOf(row),
    /** The request field the error is about (`param` of the error the client got). */
    error_param: detail.error?.param ?? null,
    /** What the upstream said (status, code, type, param; message only with `records.keep_upstream_error_message`). */
    upstream_error: detail.error?.upstream ?? null,
    http_status: row.http_status,
    finish_reason: row.finish_reason,
    native_finish_reason: row.native_finish_reason,
    api_type: row.api,
    streamed: row.streamed === 1,
    cancelled: row.cancelled === 1,
    tokens_prompt: row.prompt_tokens,
    tokens_completion: row.completion_tokens,
    native_tokens_reasoning: row.reasoning_tokens,
    native_tokens_cached: row.cached_tokens,
    native_tokens_cache_write: row.cache_write_tokens,
    usage_source: row.usage_source,
    total_cost: picoToUsdString(BigInt(row.cost_pico)),
    latency: row.latency_ms,
    time_to_first_token: row.ttft_ms,
    tags: JSON.parse(row.tags) as string[],
    session_id: row.session,
    /** The app's end user (`user`, `x-op-user`): as sent, or `sha256:<hash>` when retention is `none`; null for none. */
    user: row.end_user ?? null,
    retention: row.retention === 'none' ? 'none' : Number(row.retention),
    provider_responses: detail.attempts,
    routing_reason: detail.routing_reason ?? null,
    /** The label of the provider's `api_keys` entry that served (the last attempt's on a failure; each attempt's in `provider_responses[].credential`); null for a provider with one key. Never the key. */
    credential: detail.credential ?? null,
    dropped_parameters: detail.dropped_parameters,
    warnings: detail.warnings ?? [],
    /** What the upstream said beyond the generation (Azure's content-filter results), or null. */
    provider_metadata: detail.provider_metadata ?? null,
    /** Answered from the response cache (cost 0). */
    cache_hit: detail.cache_hit === true,
    content: row.content === null ? null : (JSON.parse(row.content) as unknown),
  };
}

interface AttemptDetail {
  endpoint: string;
  provider: string;
  model: string;
  status: number | null;
  latency_ms: number;
}

/**
 * The generation as `GET /v1/generation` returns it: {@link generationObject} plus OpenRouter's
 * `GenerationResponse` members in OpenRouter's types (`total_cost` and `usage` as JSON numbers of
 * USD, the exact decimal kept in `total_cost_usd`; `provider_responses` with `endpoint_id`,
 * `provider_name`, `latency`; `preset_id` from the `preset:<slug>` tag). Fields a self-hosted
 * gateway has no value for (app, referer, moderation, media counts, workspace) are null.
 * @see https://openrouter.ai/docs/api-reference/generations/get-generation
 */
export function openRouterGenerationObject(row: GenerationsTable) {
  const base = generationObject(row);
  const preset = base.tags.find((t) => t.startsWith('preset:'));
  return {
    ...base,
    total_cost: Number(base.total_cost),
    total_cost_usd: base.total_cost,
    usage: Number(base.total_cost),
    upstream_inference_cost: null,
    cache_discount: null,
    is_byok: false,
    origin: '',
    app_id: null,
    http_referer: null,
    user_agent: null,
    external_user: null,
    data_region: 'global',
    router: null,
    service_tier: null,
    upstream_id: null,
    workspace_id: null,
    web_search_engine: null,
    response_cache_source_id: null,
    moderation_latency: null,
    generation_time: row.latency_ms === null ? null : row.latency_ms - (row.ttft_ms ?? 0),
    native_tokens_prompt: row.prompt_tokens,
    native_tokens_completion: row.completion_tokens,
    native_tokens_completion_images: null,
    num_media_prompt: null,
    num_media_completion: null,
    num_input_audio_prompt: null,
    num_search_results: null,
    num_fetches: null,
    preset_id: preset ? preset.slice('preset:'.length) : null,
    provider_responses: (base.provider_responses as AttemptDetail[]).map((a) => ({
      ...a,
      endpoint_id: a.endpoint,
      provider_name: a.provider,
      latency: a.latency_ms,
      status: typeof a.status === 'number' ? a.status : null,
      is_byok: false,
    })),
  };
}

/** Whether a signed-in user's team roles reach the key (single sign-on: a viewer or team admin of its team). */
async function inSessionTeams(db: Kysely<Database>, session: Session | null, keyId: string | null): Promise<boolean> {
  if (session === null || keyId === null) return false;
  const [scope, key] = await Promise.all([teamScope(db, session), getKey(db, keyId)]);
  return keyInScope(scope, key?.team?.id, 'read');
}

/** `GET /v1/generation?id=gen_…`: a key sees only its own generations; the admin key sees all. */
export function registerGenerationRoutes(app: FastifyInstance, rt: () => GatewayRuntime, db: Kysely<Database>): void {
  app.get<{ Querystring: { id?: string } }>('/v1/generation', { config: { ownsPath: true, teamRoles: true } }, async (req) => {
    const id = req.query.id;
    if (!id || typeof id !== 'string') throw new GatewayError('invalid_request', 'id: is required (?id=gen_…)', { param: 'id' });
    const key: ApiKey = req.apiKey;
    const row = await findGeneration(db, rt().writer, id);
    if (!row || (!key.isAdmin && row.key_id !== key.id && !(await inSessionTeams(db, req.ssoSession, row.key_id)))) {
      throw new GatewayError('not_found', `no generation ${JSON.stringify(id)} for this key`, { param: 'id' });
    }
    return { data: openRouterGenerationObject(row) };
  });
}
