import type { Generated } from 'kysely';

/** Upper bounds (ms) of the latency histogram buckets; the last bucket is open-ended. */
export const LATENCY_BUCKETS_MS = [10, 25, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 7500, 10000, 15000, 20000, 30000, 60000, 120000] as const;

/** Table `api_keys`: client keys. Only the SHA-256 of a secret is stored. */
export interface ApiKeysTable {
  id: string;
  name: string;
  /** Hex SHA-256 of the secret. */
  hash: string;
  /** First characters of the secret, to recognise it in lists (`op-abc1…`). */
  prefix: string;
  disabled: number;
  created_at: number;
  /** Unix ms, or null for never. */
  expires_at: number | null;
  /** JSON text: limits, allowed models, default retention (later issues). */
  settings: string;
  /** The team the key belongs to (`teams.id`), or null; since migration `0010_teams`. */
  team_id: string | null;
}

/** Table `teams` (migration `0010_teams`): groups of keys with a shared budget and limits. */
export interface TeamsTable {
  id: string;
  /** Unique. */
  name: string;
  created_at: number;
  /** JSON text: store/teams.ts `TeamSettings`. */
  settings: string;
}

/** Table `generations`: exactly one row per accepted request. Times are unix ms / durations ms. */
export interface GenerationsTable {
  id: string;
  request_id: string;
  created_at: number;
  key_id: string | null;
  requested_model: string;
  served_model: string | null;
  provider: string | null;
  endpoint: string | null;
  upstream_model: string | null;
  /** `success` | `error` | `cancelled`. */
  status: string;
  error_code: string | null;
  error_message: string | null;
  http_status: number;
  finish_reason: string | null;
  native_finish_reason: string | null;
  api: string;
  streamed: number;
  cancelled: number;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  reasoning_tokens: number | null;
  cached_tokens: number | null;
  cache_write_tokens: number | null;
  /** `upstream` | `estimated` | null when nothing was generated. */
  usage_source: string | null;
  /** Picodollars (1e-12 USD), exact. */
  cost_pico: bigint | number;
  latency_ms: number;
  ttft_ms: number | null;
  tags: string;
  session: string | null;
  /** The app's end user (`user`, `x-op-user`): as sent, or `sha256:<hash>` under retention `none`; since migration `0011_end_users`. */
  end_user?: string | null;
  /** The batch (`batch_…` / `msgbatch_…`) a batch line's generation ran for, else null; absent is null. */
  batch_id?: string | null;
  /** The batch line's `custom_id`, else null; absent is null. */
  custom_id?: string | null;
  retention: string;
  /** JSON: attempts, dropped parameters, warnings. */
  detail: string;
  /** JSON of the request messages and output, or null when retention forbids text. */
  content: string | null;
}

/**
 * Table `stored_responses`: Responses API objects kept while retention keeps text (`store`), for
 * `GET /v1/responses/{id}` and `previous_response_id`. Times are unix ms.
 */
export interface StoredResponsesTable {
  /** The generation id (`gen_…`), also the response's `id`. */
  id: string;
  /** The owning key; null for the admin key. */
  key_id: string | null;
  created_at: number;
  /** When the text's retention runs out (unix ms); null: kept until deleted. */
  expires_at: number | null;
  /** JSON text: the response object and the input items it answered. */
  body: string;
}

/**
 * Hourly usage rollups, written in the same transaction as the generation rows they count, so
 * usage queries never scan `generations`. Latency histograms are JSON arrays of counts over
 * {@link LATENCY_BUCKETS_MS}. Money in picodollars.
 */
export interface UsageRollupColumns {
  /** Unix ms of the hour's start (UTC). */
  hour: number;
  /** The key's id, or '' for the admin key. */
  key_id: string;
  /** Served model, else the requested one. */
  model: string;
  /** Provider id, or '' when no provider answered. */
  provider: string;
  requests: number;
  /** Errors that are not refusals (failures at a provider or in the gateway). */
  errors: number;
  /** Refusals (`isRefusal` in refusal.ts: a 4xx for the request's or key's own reason, no provider answering); since migration `0006`. */
  refused: number;
  cancelled: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  cached_tokens: number;
  cost_pico: bigint | number;
  latency_hist: string;
  ttft_hist: string;
}

export type UsageHourlyTable = UsageRollupColumns;
/** The same rollup per tag (a generation with two tags counts in both). */
export type UsageHourlyTagsTable = UsageRollupColumns & { tag: string };

/**
 * Daily usage rollups: the hourly rollups summed by UTC day (the same columns, with `day` for
 * `hour`), written in the same transaction. Usage reads take whole days from here and only the
 * partial days at a range's edges from the hourly tables.
 */
export type UsageDailyTable = Omit<UsageRollupColumns, 'hour'> & {
  /** Unix ms of the UTC day's start. */
  day: number;
};
/** The daily rollup per tag (a generation with two tags counts in both). */
export type UsageDailyTagsTable = UsageDailyTable & { tag: string };

/**
 * Requests per (UTC day, key, session), for generations with a session: ranks the sessions of
 * `group_by: session` over whole days without reading `generations`. Only counts (the chosen
 * sessions' figures are read from their generations).
 */
export interface UsageDailySessionsTable {
  /** Unix ms of the UTC day's start. */
  day: number;
  /** The key's id, or '' for the admin key. */
  key_id: string;
  session: string;
  requests: number;
}
/** The same counts by model (served, else requested) and provider ('' for none): ranks sessions under a model or provider filter. */
export type UsageDailySessionModelsTable = UsageDailySessionsTable & { model: string; provider: string };
/** The same counts per tag as well: ranks sessions under a tag filter. */
export type UsageDailySessionTagsTable = UsageDailySessionModelsTable & { tag: string };

/** One row per (generation, tag): the index behind filtering requests by tag. */
export interface GenerationTagsTable {
  generation_id: string;
  tag: string;
  created_at: number;
  key_id: string | null;
}

/** Every column of `generations`, in the order the record writer binds them (checked complete by the type). */
export const GENERATION_COLUMNS = Object.keys({
  id: 0, request_id: 0, created_at: 0, key_id: 0, requested_model: 0, served_model: 0, provider: 0, endpoint: 0, upstream_model: 0,
  status: 0, error_code: 0, error_message: 0, http_status: 0, finish_reason: 0, native_finish_reason: 0, api: 0, streamed: 0, cancelled: 0,
  prompt_tokens: 0, completion_tokens: 0, reasoning_tokens: 0, cached_tokens: 0, cache_write_tokens: 0, usage_source: 0, cost_pico: 0,
  latency_ms: 0, ttft_ms: 0, tags: 0, session: 0, end_user: 0, batch_id: 0, custom_id: 0, retention: 0, detail: 0, content: 0,
} satisfies Record<keyof GenerationsTable, 0>) as readonly (keyof GenerationsTable)[];

/** Every column of `generation_tags`, in the order the record writer binds them. */
export const GENERATION_TAG_COLUMNS = Object.keys({ generation_id: 0, tag: 0, created_at: 0, key_id: 0 } satisfies Record<keyof GenerationTagsTable, 0>) as readonly (keyof GenerationTagsTable)[];

export interface Database {
  api_keys: ApiKeysTable;
  teams: TeamsTable;
  generations: GenerationsTable;
  usage_hourly: UsageHourlyTable;
  usage_hourly_tags: UsageHourlyTagsTable;
  usage_daily: UsageDailyTable;
  usage_daily_tags: UsageDailyTagsTable;
  usage_daily_sessions: UsageDailySessionsTable;
  usage_daily_session_models: UsageDailySessionModelsTable;
  usage_daily_session_tags: UsageDailySessionTagsTable;
  generation_tags: GenerationTagsTable;
  stored_responses: StoredResponsesTable;
  migrations_applied: { name: string; applied_at: Generated<number> };
  response_cache: ResponseCacheTable;
  catalog_entries: CatalogEntriesTable;
  catalog_revision: { id: number; revision: number };
  mcp_tool_calls: McpToolCallsTable;
  audit_log: AuditLogTable;
  alert_webhooks: AlertWebhooksTable;
  alert_events: AlertEventsTable;
  alert_deliveries: AlertDeliveriesTable;
  alert_state: AlertStateTable;
  batch_files: BatchFilesTable;
  batch_file_chunks: BatchFileChunksTable;
  batches: BatchesTable;
  batch_lines: BatchLinesTable;
}

/**
 * A provider or model of the catalog entered through the admin API (store/catalog-entries.ts).
 * `entry` is the config file's shape as JSON, its secrets sealed (util/secret-box.ts). Unix ms.
 */
export interface CatalogEntriesTable {
  kind: 'provider' | 'model';
  id: string;
  entry: string;
  created_at: number;
  updated_at: number;
  /** Who made the last change: `admin` for the admin key, else a key or user id. */
  updated_by: string | null;
}

/**
 * Table `mcp_tool_calls` (migration `0013_mcp_tool_calls`, issue 22 item 4): one row per MCP
 * `tools/call` through `/mcp`, `/mcp/{server}` or the Responses API's `mcp` tool loop. Times are
 * unix ms, durations ms, sizes bytes of JSON.
 */
export interface McpToolCallsTable {
  /** `mcpc_…`. */
  id: string;
  created_at: number;
  /** The key's id, or null for the admin key. */
  key_id: string | null;
  team_id: string | null;
  /** The Responses request (`req_…`) whose tool loop made the call; null for a client of `/mcp`. */
  request_id: string | null;
  /** The gateway's MCP session (`Mcp-Session-Id`, `inproc_…` for the tool loop). */
  session_id: string;
  /** The `mcp_servers` id ('' when the name matched no server). */
  server: string;
  /** The upstream's tool name (the client's name when it matched no server). */
  tool: string;
  /** `ok` | `tool_error` (a result with `isError`) | `error` (failed, timed out) | `refused` (not allowed, rate limited). */
  status: string;
  /** The catalog code (or the upstream's JSON-RPC code as text) of an `error` or `refused`. */
  error_code: string | null;
  error_message: string | null;
  latency_ms: number;
  request_bytes: number;
  response_bytes: number;
  /** `none` or days, as for generations: whether and how long the text columns are kept. */
  retention: string;
  /** JSON of the call's `arguments`, or null under retention `none` (and once purged). */
  arguments: string | null;
  /** JSON of the result, or null under retention `none` (and once purged). */
  result: string | null;
}

/** One admin change (store/audit-log.ts): append-only. Times in ms since the epoch; before/after JSON without secrets. */
export interface AuditLogTable {
  /** `aud_…`, sorting by time. */
  id: string;
  created_at: number;
  /** `admin_key`, `key`, `cli` or `system`. */
  actor_type: string;
  /** The admin key (`admin`), the key's id, `<os user>@<host>` for the CLI, or what acted (`SIGHUP`). */
  actor_id: string;
  /** `key.create`, `key.update`, `key.disable`, `key.delete`, `team.create`, …, `config.reload`, `alert_webhook.create`, … */
  action: string;
  target_type: string;
  target_id: string | null;
  before: string | null;
  after: string | null;
  request_id: string | null;
  source_ip: string | null;
}

/** An alert webhook made through `POST /v1/alerts/webhooks` (config ones live in the config file). */
export interface AlertWebhooksTable {
  /** `whk_…` */
  id: string;
  url: string;
  /** `json` or `slack`. */
  format: string;
  /** The environment variable holding the HMAC secret (the secret itself is never stored). */
  secret_env: string | null;
  /** JSON array of event types (empty = all). */
  events: string;
  created_at: number;
}

/** An alert event: one row per `dedupe_key` across every process sharing the database. */
export interface AlertEventsTable {
  id: string;
  dedupe_key: string;
  type: string;
  created_at: number;
  /** JSON: the event's `data`. */
  data: string;
}

/** One event sent to one webhook: its attempts and outcome. */
export interface AlertDeliveriesTable {
  id: string;
  event_id: string;
  webhook_id: string;
  url: string;
  /** `pending`, `delivered` or `failed`. */
  status: string;
  attempts: number;
  next_attempt_at: number;
  /** The process sending it holds the row until then (ms); 0 = free. */
  claimed_until: number;
  last_status: number | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}

/** The fleet-wide state of a watched subject (`breaker:<endpoint>`), changed by compare-and-set. */
export interface AlertStateTable {
  subject: string;
  state: string;
  version: number;
  updated_at: number;
}

/**
 * A file of the Files API (`POST /v1/files`, purpose `batch`), or a batch's output or error
 * file (`batch_output`, its content made from the batch's lines). Times in unix ms.
 */
export interface BatchFilesTable {
  id: string;
  /** The uploading key; null for the admin key. */
  key_id: string | null;
  purpose: string;
  filename: string;
  bytes: number;
  created_at: number;
  expires_at: number | null;
  /** For `batch_output` files: the batch they are made from; else null. */
  batch_id: string | null;
  /** For `batch_output` files: `output` or `error`; else null. */
  role: string | null;
}

/** An uploaded file's bytes, in order (`seq` from 0), as UTF-8 text of at most 1 MiB each. */
export interface BatchFileChunksTable {
  file_id: string;
  seq: number;
  data: string;
}

/** A batch (OpenAI Batch or Anthropic Message Batch), run by the gateway. Times in unix ms. */
export interface BatchesTable {
  id: string;
  key_id: string | null;
  /** `openai` or `anthropic`: the API the batch was created through. */
  api: string;
  /** The endpoint of every line (`/v1/chat/completions`, …; `/v1/messages` for Anthropic). */
  endpoint: string;
  input_file_id: string | null;
  /** OpenAI's status names: validating, in_progress, finalizing, completed, failed, expired, cancelling, cancelled. */
  status: string;
  completion_window: string;
  /** JSON object or null. */
  metadata: string | null;
  /** JSON `{data: [{code, message, param, line}]}` of a failed batch, else null. */
  errors: string | null;
  total: number;
  /** The key's retention when the batch was made (`none` or days), for the batch's own files. */
  retention: string;
  created_at: number;
  expires_at: number;
  in_progress_at: number | null;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  /** When its results were first read (retention `none`: the inputs and outputs go then). */
  results_read_at: number | null;
  output_file_id: string | null;
  error_file_id: string | null;
}

/**
 * One line of a batch, queued for the workers. `state`: `queued` → `running` (held by
 * `lease_owner` until `lease_until`) → `done` (its result written in the same transaction as its
 * generation record); `canceled` and `expired` for lines that never ran.
 */
export interface BatchLinesTable {
  batch_id: string;
  /** 0-based position in the input. */
  line_no: number;
  custom_id: string;
  /** The `batch_req_…` id of the line's output. */
  line_id: string;
  key_id: string | null;
  model: string;
  /** The request body (JSON). */
  body: string;
  state: string;
  lease_owner: string | null;
  lease_until: number;
  /** Not claimed before this time (a rate-limited line waits), unix ms. */
  not_before: number;
  /** Runs that were retried (rate limited). */
  tries: number;
  /** HTTP status of the answer, when done. */
  status_code: number | null;
  /** The answer body (JSON), when done. */
  result: string | null;
  generation_id: string | null;
  request_id: string | null;
  finished_at: number | null;
}

/** One cached answer of the exact response cache (src/cache/). Times in ms since the epoch. */
export interface ResponseCacheTable {
  cache_key: string;
  /** The cached answer as JSON (src/cache/cached-answer.ts). */
  value: string;
  size_bytes: number;
  created_at: number;
  expires_at: number;
}
