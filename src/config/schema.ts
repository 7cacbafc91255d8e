import { alertsSchema, auditSchema } from './alerts-schema.js';
import { z } from 'zod';
import { PROVIDER_CONFIG_SCHEMAS } from '../providers/config-schemas.js';
import { apiKeysSchema } from './credentials-schema.js';
import { dashboardSchema } from './dashboard-schema.js';
import { mcpServersSchema } from './mcp-servers-schema.js';
import { mcpToolLoopSchema } from './mcp-tool-loop-schema.js';
import { batchesSchema } from './batches-schema.js';
import { modelVariantSchema, presetSchema } from './presets-schema.js';
import { PROVIDER_PRESET_NAMES } from './provider-presets.js';
import type { UnionToIntersection } from './provider-kind-schema.js';

/**
 * The configuration file's schema (SPEC §3). Every object is strict: an unknown key is an
 * error that names its path. Durations are in milliseconds, prices in USD per 1M tokens.
 */

const slug = z.string().regex(/^[a-z0-9][a-z0-9._-]*$/i, 'must be a slug: letters, digits, ".", "_" or "-"');

/**
 * A value sent in an HTTP header (a key, a header value): control characters would split or
 * corrupt the request line (CR/LF header injection), so none is allowed — a key read from a
 * file with its trailing newline is the usual cause.
 */
const headerValue = z.string().refine((v) => ![...v].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f), 'must not contain control characters (CR, LF, tab …); a value read from a file may carry a trailing newline');
/** An HTTP header name (an RFC 9110 token). */
const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be a header name: letters, digits and !#$%&\'*+.^_`|~-');

/** Timeouts of upstream calls, in ms. `0` disables one. */
export const timeoutsSchema = z
  .object({
    /** TCP + TLS connect. */
    connect_ms: z.number().int().min(0).default(10_000),
    /** From sending the request to the first token (streams) or the response headers (non-stream). */
    first_token_ms: z.number().int().min(0).default(60_000),
    /** Longest silence between two stream chunks. */
    idle_ms: z.number().int().min(0).default(60_000),
    /** Whole non-streaming call. Never applied to a stream that keeps sending. */
    total_ms: z.number().int().min(0).default(600_000),
    /** Longest wait for a free local connection slot (all `max_connections` busy), counted apart from `first_token_ms`; then `connection_pool_exhausted`. */
    pool_wait_ms: z.number().int().min(0).default(10_000),
  })
  .strict();

export const dataPolicySchema = z
  .object({
    retains_prompts: z.boolean().default(false),
    trains_on_prompts: z.boolean().default(false),
    zdr: z.boolean().default(false),
  })
  .strict();

/** Every provider kind's config schema (src/providers/<kind>/<kind>-config-schema.ts), by kind. */
type KindSchemas = (typeof PROVIDER_CONFIG_SCHEMAS)[keyof typeof PROVIDER_CONFIG_SCHEMAS];
const KIND_SCHEMAS: readonly KindSchemas[] = Object.values(PROVIDER_CONFIG_SCHEMAS);
/** The provider kinds, in the order of the list (that of the `kind` enum's error message). */
const PROVIDER_KINDS = Object.keys(PROVIDER_CONFIG_SCHEMAS) as [keyof typeof PROVIDER_CONFIG_SCHEMAS, ...(keyof typeof PROVIDER_CONFIG_SCHEMAS)[]];
/** Every kind's `providerFields`, merged (each field is read by its kind only). */
const kindProviderFields = Object.assign({}, ...KIND_SCHEMAS.map((k) => k.providerFields)) as UnionToIntersection<KindSchemas['providerFields']>;
/** Every kind's `endpointFields`, merged (each field is read by endpoints of its kind only). */
const kindEndpointFields = Object.assign({}, ...KIND_SCHEMAS.map((k) => k.endpointFields)) as UnionToIntersection<KindSchemas['endpointFields']>;

export const providerSchema = z
  .object({
    id: slug,
    /**
     * A provider preset (provider-presets.ts): filled in before validation (load.ts), so here
     * `kind`, `base_url`, `dialect` and the key default are already the preset's unless the
     * entry set them. Kept so `config check` can show what it expanded to.
     */
    preset: z.enum(PROVIDER_PRESET_NAMES).optional(),
    kind: z.enum(PROVIDER_KINDS),
    base_url: z.string().url('must be an absolute http(s) URL').optional(),
    api_key: headerValue.optional(),
    /** Several weighted keys instead of `api_key` (credentials-schema.ts); refused with `api_key`, and by kinds without key auth. */
    api_keys: apiKeysSchema(headerValue).optional(),
    headers: z.record(headerName, headerValue).default({}),
    data_policy: dataPolicySchema.default({}),
    timeouts: timeoutsSchema.default({}),
    /** Most calls (and connections) open to this provider at once; a stream holds one for its whole life. */
    max_connections: z.number().int().min(1).max(100_000).default(4096),
  })
  /** The kinds' own fields (`dialect`, `image_fetch`, `local`, …): see src/providers/<kind>/<kind>-config-schema.ts. */
  .extend(kindProviderFields)
  .strict();

/** A provider kind: the wire format the gateway speaks to it. */
export type ProviderKind = z.infer<typeof providerSchema>['kind'];

/**
 * What each provider kind's embeddings call takes: `text` (strings only), `text-or-tokens`
 * (strings or token-id arrays), or null (the kind serves no embeddings: an endpoint's
 * `embeddings: true` is refused at load). Each kind declares it in its config schema
 * (`embeddingInputs`): `gemini` embeds text only (`batchEmbedContents`); `openai` and `local`
 * (the engine tokenizes, or takes the ids as given) take both.
 */
export const EMBEDDING_INPUTS: Readonly<Record<ProviderKind, 'text' | 'text-or-tokens' | null>> = Object.freeze(
  Object.fromEntries(KIND_SCHEMAS.map((k) => [k.kind, k.embeddingInputs])) as Record<ProviderKind, 'text' | 'text-or-tokens' | null>,
);

/**
 * The kinds whose upstreams cache a prompt only where the request marks it (`cache_control`;
 * a kind's `explicitPromptCaching`): `anthropic`. For the others a priced `cache_read` means
 * the upstream caches repeated prefixes by itself (`supports_implicit_caching` in
 * `GET /v1/models/{id}/endpoints`).
 */
export const EXPLICIT_PROMPT_CACHING: ReadonlySet<ProviderKind> = new Set(KIND_SCHEMAS.flatMap((k) => ('explicitPromptCaching' in k && k.explicitPromptCaching ? [k.kind] : [])));

/**
 * The most inputs one upstream embeddings call of a kind may carry, where the upstream has a
 * limit (a kind's `embeddingBatchLimit`): Gemini's `batchEmbedContents` refuses more than 100
 * requests. An endpoint's `max_embedding_inputs` is capped at it (and a larger value in the
 * config is refused).
 */
export const EMBEDDING_BATCH_LIMIT: Readonly<Partial<Record<ProviderKind, number>>> = Object.freeze(
  Object.fromEntries(KIND_SCHEMAS.flatMap((k) => ('embeddingBatchLimit' in k ? [[k.kind, k.embeddingBatchLimit]] : []))),
);

/** The kinds' checks `load.ts` runs over the raw config (a kind's `requiresBaseUrl`, `exclusiveEndpointFlags`). */
export { KIND_SCHEMAS };

/** USD per 1M tokens, and USD per request. Given as numbers or decimal strings. */
/** USD per 1M tokens (or per request): at most 1,000,000,000, with at most 6 decimals. */
const price = z.union([
  z.number().min(0).max(1_000_000_000, 'must be at most 1000000000 (USD per 1M tokens)').refine((n) => Number.isFinite(n) && Number(n.toFixed(6)) === n, 'must have at most 6 decimals'),
  z.string().regex(/^\d{1,10}(\.\d{1,6})?$/, 'must be a non-negative decimal with at most 10 digits before the point and 6 after it'),
]);

export const pricingSchema = z
  .object({
    prompt: price.default(0),
    completion: price.default(0),
    cache_read: price.optional(),
    cache_write: price.optional(),
    request: price.default(0),
  })
  .strict();

/** Parameter names an endpoint may list in `supported_parameters`. */
export const KNOWN_PARAMETERS = [
  'temperature', 'top_p', 'top_k', 'min_p', 'top_a', 'frequency_penalty', 'presence_penalty',
  'repetition_penalty', 'max_tokens', 'max_completion_tokens', 'logit_bias', 'logprobs',
  'top_logprobs', 'seed', 'response_format', 'structured_outputs', 'stop', 'tools', 'tool_choice',
  'parallel_tool_calls', 'include_reasoning', 'reasoning', 'reasoning_effort', 'user', 'n',
  'web_search_options', 'verbosity', 'prediction', 'service_tier',
  'prompt_cache_key', 'metadata',
] as const;

/**
 * What routing does with a request whose output limit (`max_tokens` / `max_completion_tokens` /
 * `max_output_tokens`, in tokens) is above an endpoint's `max_completion_tokens`: `exclude` the
 * endpoint (the default), or `clamp` — send the request with the limit lowered to that cap,
 * a warning in the generation record (agent clients such as Claude Code send 32000 whatever the
 * model).
 */
export const outputLimitPolicy = z.enum(['exclude', 'clamp']);

/** See {@link outputLimitPolicy}. */
export type OutputLimitPolicy = z.infer<typeof outputLimitPolicy>;

export const endpointSchema = z
  .object({
    provider: slug,
    upstream_model: z.string().min(1),
    context_length: z.number().int().positive().optional(),
    max_completion_tokens: z.number().int().positive().optional(),
    pricing: pricingSchema.default({}),
    supported_parameters: z.array(z.enum(KNOWN_PARAMETERS)).default([
      'temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'stop', 'seed',
      'frequency_penalty', 'presence_penalty',
    ]),
    /** The upstream also serves legacy `POST /completions` for this model. */
    supports_text_completions: z.boolean().default(false),
    /** The endpoint serves `POST /embeddings` (an embedding model). */
    embeddings: z.boolean().default(false),
    /** Most inputs per upstream embeddings call: a longer `input` array is sent in batches of this size (capped at the kind's `EMBEDDING_BATCH_LIMIT`: 100 for `gemini`). */
    max_embedding_inputs: z.number().int().min(1).max(100_000).default(2048),
    quantization: z.string().optional(),
    weight: z.number().positive().default(1),
    timeouts: timeoutsSchema.partial().optional(),
    /**
     * Fold system and developer messages into the first user turn, for models that reject a
     * system instruction. Default: on for model families known to (Gemma), else off.
     */
    fold_system_prompt: z.boolean().optional(),
    /** A request whose output limit is above `max_completion_tokens`: see {@link outputLimitPolicy}. Default: the model's. */
    output_limit: outputLimitPolicy.optional(),
  })
  /** The kinds' own endpoint fields (`supports_responses`, `string_content`, …): see src/providers/<kind>/<kind>-config-schema.ts. */
  .extend(kindEndpointFields)
  .strict();

const modality = z.enum(['text', 'image', 'audio', 'file', 'video', 'embeddings']);

export const modelSchema = z
  .object({
    id: z.string().regex(/^[a-z0-9][a-z0-9._-]*\/[a-z0-9][a-z0-9._:-]*$/i, 'must be "author/slug"'),
    name: z.string().min(1).optional(),
    description: z.string().optional(),
    context_length: z.number().int().positive(),
    architecture: z
      .object({
        input_modalities: z.array(modality).min(1).default(['text']),
        output_modalities: z.array(modality).min(1).default(['text']),
        tokenizer: z.string().default('GPT'),
      })
      .strict()
      .default({}),
    endpoints: z.array(endpointSchema).min(1, 'a model needs at least one endpoint'),
    /** Other names the model answers to (e.g. `claude-sonnet-4-5`, as agent clients send it). */
    aliases: z.array(z.string().min(1).max(200)).default([]),
    /** Cache this model's answers for every request (see `cache`); a TTL in seconds, or true for the default. */
    cache: z.union([z.boolean(), z.number().int().min(1)]).optional(),
    /** The default `output_limit` of the model's endpoints ({@link outputLimitPolicy}); `exclude` when unset. */
    output_limit: outputLimitPolicy.optional(),
  })
  .strict();

/**
 * Overload protection (`server.overload`): while a threshold is passed, new generation requests
 * are refused with 503 `gateway_overloaded` before their body is read, `/ready` answers 503
 * `overloaded`; `/health` and streams already admitted are never touched. 0 switches a check off.
 * @see https://github.com/fastify/under-pressure (the event-loop sampler)
 */
export const overloadSchema = z
  .object({
    /** Mean event-loop delay over the last sample interval above which new generations are refused, in ms (0 = off). */
    max_event_loop_delay_ms: z.number().int().min(0).max(60_000).default(1000),
    /** Event-loop utilization over the last sample interval (0–1) above which new generations are refused (0 = off). */
    max_event_loop_utilization: z.number().min(0).max(1).default(0),
    /** Most generation requests served at once, streamed or not; the next one is refused (0 = no limit). */
    max_in_flight_requests: z.number().int().min(0).max(10_000_000).default(0),
    /** Most streamed generations held at once; the next streamed one is refused (non-streamed ones still served; 0 = no limit). */
    max_streams: z.number().int().min(0).max(10_000_000).default(0),
    /** `Retry-After` of a refusal, in seconds. */
    retry_after_s: z.number().int().min(1).max(3600).default(2),
    /** How often the event-loop delay and utilization are sampled, in ms (read at start, not on reload). */
    sample_interval_ms: z.number().int().min(50).max(60_000).default(1000),
  })
  .strict();

const retention = z.union([z.literal('none'), z.number().int().min(0)]);

export const serverSchema = z
  .object({
    /** Largest accepted request body, in bytes. */
    body_limit_bytes: z.number().int().min(1024).max(1024 * 1024 * 1024).default(10 * 1024 * 1024),
    /** Interval of `: keep-alive` comments while a stream waits for its first token, in ms (0 = off). */
    keepalive_interval_ms: z.number().int().min(0).default(15_000),
    /** How long SIGTERM waits for in-flight requests, in ms. */
    drain_timeout_ms: z.number().int().min(0).default(30_000),
    /** Deepest JSON nesting accepted in a request body. */
    max_json_depth: z.number().int().min(8).max(1000).default(64),
    /** Most JSON values (array elements and object members) in a request body, counted before parsing. */
    max_json_values: z.number().int().min(1000).max(100_000_000).default(500_000),
    /** Most JSON objects and arrays in a request body, counted before parsing. */
    max_json_containers: z.number().int().min(1000).max(100_000_000).default(100_000),
    /** Most `messages` in one request (checked before validation: bounds a request's event-loop time). */
    max_messages: z.number().int().min(1).max(1_000_000).default(10_000),
    /** Most content parts over all messages of one request (checked before validation). */
    max_content_parts: z.number().int().min(1).max(1_000_000).default(10_000),
    /** Put `GET /metrics` behind the admin key (`OP_ADMIN_KEY`). Off: /metrics is public. */
    metrics_auth: z.boolean().default(false),
    /** Let browser apps on other origins call the API (CORS). Unset: off. */
    cors: z
      .object({
        /** Origins allowed, exactly as browsers send them (`https://app.example.com`), or `*` for any. */
        allowed_origins: z
          .array(z.string().regex(/^(\*|https?:\/\/[^/\s?#]+)$/, 'must be "*" or an origin like https://app.example.com (scheme and host, no path)'))
          .min(1, 'list at least one origin'),
        /** How long a browser may cache a preflight answer, in seconds. */
        max_age_s: z.number().int().min(0).max(86_400).default(600),
      })
      .strict()
      .optional(),
    /** Longest time a client may take to send a request's head (line and headers), in ms (0 = no limit). */
    headers_timeout_ms: z.number().int().min(0).default(15_000),
    /** Longest time a client may take to send a whole request, head and body, in ms (0 = no limit). Answered with a bare 408. */
    request_timeout_ms: z.number().int().min(0).default(120_000),
    /** Longest silence while a request body is being received, in ms (0 = none); answered with 408 `request_timeout`. */
    body_idle_timeout_ms: z.number().int().min(0).default(10_000),
    /** Largest non-streaming upstream response body read, in bytes; a larger one is `upstream_invalid_response`. */
    upstream_max_response_bytes: z.number().int().min(1024).max(1024 * 1024 * 1024).default(32 * 1024 * 1024),
    /** Largest single upstream stream event (or line), in bytes; a larger one is `upstream_invalid_response`. */
    upstream_max_event_bytes: z.number().int().min(1024).max(1024 * 1024 * 1024).default(8 * 1024 * 1024),
    /**
     * The listen backlog: connections the kernel queues for `accept` (Node's own default is 511;
     * the kernel caps it at `net.core.somaxconn`, 4096 on Linux since 5.4). A full queue resets
     * connections before the gateway can answer them, so it is sized for bursts of agent streams.
     */
    listen_backlog: z.number().int().min(1).max(65_535).default(4096),
    /** Overload protection: new generation requests refused early with 503 `gateway_overloaded` (docs/resource-bounds.md). */
    overload: overloadSchema.default({}),
  })
  .strict()
  .refine((s) => s.request_timeout_ms === 0 || s.headers_timeout_ms === 0 || s.headers_timeout_ms <= s.request_timeout_ms, {
    message: 'headers_timeout_ms must not be longer than request_timeout_ms',
    path: ['headers_timeout_ms'],
  });

/** Traces and metrics over OTLP (switched on by the standard `OTEL_EXPORTER_OTLP_*` variables). */
export const telemetrySchema = z
  .object({
    /** Put request and output text on the server span (`gen_ai.input.messages`, `gen_ai.output.messages`); never for retention `none`. */
    capture_content: z.boolean().default(false),
    /** Spans waiting for export; beyond it spans are dropped (and counted), never waited for. */
    max_queue_size: z.number().int().min(1).max(1_000_000).default(2048),
  })
  .strict();

/** The exact response cache (opt-in per request, key or model). */
export const cacheSchema = z
  .object({
    /** TTL when a request asks none (`op.cache_ttl`), in seconds. */
    default_ttl_s: z.number().int().min(1).default(300),
    /** Longest TTL accepted; a longer `op.cache_ttl` is cut to it, in seconds. */
    max_ttl_s: z.number().int().min(1).max(30 * 86_400).default(86_400),
    /** Largest cached answer, in bytes; larger answers are not cached. */
    max_entry_bytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
    /** Most bytes all entries may take (the oldest go first), in bytes. */
    max_total_bytes: z.number().int().min(1024).default(256 * 1024 * 1024),
    /**
     * Keys (by id) that share one cache scope: each inner list is one shared scope. A key id may
     * be in one group only (in two, which scope it reads would be ambiguous): refused at load.
     */
    shared_scopes: z.array(z.array(z.string().min(1)).min(2)).default([]).superRefine((groups, ctx) => {
      const seen = new Map<string, number>();
      groups.forEach((group, g) => {
        for (const [i, id] of group.entries()) {
          const first = seen.get(id);
          if (first === undefined) seen.set(id, g);
          else if (first !== g) ctx.addIssue({ code: 'custom', path: [g, i], message: `key ${id} is in shared_scopes groups ${first} and ${g}; a key may be in one group only (merge the two groups into one)` });
        }
      });
    }),
  })
  .strict();

/** Routing, failover and health settings. */
export const routingSchema = z
  .object({
    /** Most upstream attempts for one request (across endpoints and models). */
    max_attempts: z.number().int().min(1).max(50).default(5),
    /** No new attempt starts later than this after the request arrived, in ms (0 = no limit). */
    request_deadline_ms: z.number().int().min(0).default(120_000),
    /** Longest upstream `Retry-After` honoured as an endpoint cooldown, in ms. */
    retry_after_cap_ms: z.number().int().min(0).default(60_000),
    circuit_breaker: z
      .object({
        /** Consecutive failures that open an endpoint's circuit. */
        failure_threshold: z.number().int().min(1).default(5),
        /** How long an open circuit waits before one half-open probe, in ms. */
        open_ms: z.number().int().min(1).default(30_000),
      })
      .strict()
      .default({}),
    /** A failure this recent orders an endpoint last, in ms. */
    recent_failure_ms: z.number().int().min(0).default(30_000),
    /** How long health samples are kept, in ms. */
    stats_window_ms: z.number().int().min(60_000).default(30 * 60_000),
  })
  .strict();

/** The Redis connection (`OP_REDIS_URL`): timeouts in ms. Read at start. */
export const redisSchema = z
  .object({
    /** Longest wait for one command; past it keys with limits get 503 `limits_unavailable` at once until Redis answers again. */
    command_timeout_ms: z.number().int().min(1).max(60_000).default(1000),
    /** Longest wait for the connection at start (and per reconnection attempt). */
    connect_timeout_ms: z.number().int().min(1).max(600_000).default(10_000),
  })
  .strict();

/**
 * How generation records reach the database (see docs/records.md). `batched`: the response is
 * sent first and records are written in batches, so a crash (SIGKILL, power loss aside) loses
 * at most the records answered in the last `flush_interval_ms`. `strict`: the record of each
 * generation is committed before the last byte of its response (the end of a JSON body, the
 * `[DONE]` of a stream) is sent.
 */
export const recordsSchema = z
  .object({
    /** Longest a record waits in memory before its batch is written, in ms (`batched` mode). */
    flush_interval_ms: z.number().int().min(1).max(60_000).default(200),
    durability: z.enum(['batched', 'strict']).default('batched'),
    /** Most records held in memory while the database cannot be written; older ones are dropped and counted beyond. */
    max_queued: z.number().int().min(1_000).max(10_000_000).default(100_000),
    /**
     * Keep the upstream's error message (`upstream_error.message`) in every failed record, also
     * under retention `none`. Off: it is kept only inside `error_message`, while retention keeps text.
     */
    keep_upstream_error_message: z.boolean().default(false),
  })
  .strict();

export const configSchema = z
  .object({
    server: serverSchema.default({}),
    routing: routingSchema.default({}),
    redis: redisSchema.default({}),
    records: recordsSchema.default({}),
    /** Default data retention: `none` stores no prompt/completion text, a number keeps it that many days. */
    retention: retention.default('none'),
    providers: z.array(providerSchema).default([]),
    models: z.array(modelSchema).default([]),
    /** Named request defaults (`@preset/<slug>`, `preset`, `model@preset/<slug>`). */
    presets: z.array(presetSchema).default([]),
    /** Operator-defined model variants (`model:<name>`), beside the built-in nitro, floor and free. */
    model_variants: z.array(modelVariantSchema).default([]),
    telemetry: telemetrySchema.default({}),
    cache: cacheSchema.default({}),
    /** Upstream MCP servers aggregated at `/mcp` (mcp-servers-schema.ts, docs/mcp.md). */
    mcp_servers: mcpServersSchema({ name: headerName, value: headerValue }),
    /** Bounds of the Responses API `mcp` tool's loop (mcp-tool-loop-schema.ts). */
    mcp_tool_loop: mcpToolLoopSchema.default({}),
    /** The dashboard's single sign-on (dashboard-schema.ts, docs/governance.md). */
    dashboard: dashboardSchema.default({}),
    /** The audit log's retention (alerts-schema.ts, docs/governance.md#audit-log). */
    audit: auditSchema.default({}),
    /** Alert webhooks and when alerts fire (alerts-schema.ts, docs/governance.md#alerts). */
    alerts: alertsSchema.default({}),
    /** The Files API and gateway-run batches (batches-schema.ts, docs/batches.md). */
    batches: batchesSchema.default({}),
  })
  .strict();

export type { PresetConfig, ModelVariantConfig } from './presets-schema.js';
export type TimeoutsConfig = z.infer<typeof timeoutsSchema>;
export type ProviderConfig = z.infer<typeof providerSchema>;
export type PricingConfig = z.infer<typeof pricingSchema>;
export type EndpointConfig = z.infer<typeof endpointSchema>;
export type ModelConfig = z.infer<typeof modelSchema>;
export type ServerConfig = z.infer<typeof serverSchema>;
export type OverloadConfig = z.infer<typeof overloadSchema>;
export type GatewayConfig = z.infer<typeof configSchema>;
export type TelemetryConfig = z.infer<typeof telemetrySchema>;
export type { McpServerConfig } from './mcp-servers-schema.js';
export type { DashboardConfig, OidcConfig } from './dashboard-schema.js';
