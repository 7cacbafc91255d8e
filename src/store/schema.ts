import type { Generated } from 'kysely';

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
  retention: string;
  /** JSON: attempts, dropped parameters, warnings. */
  detail: string;
  /** JSON of the request messages and output, or null when retention forbids text. */
  content: string | null;
}

export interface Database {
  api_keys: ApiKeysTable;
  generations: GenerationsTable;
  migrations_applied: { name: string; applied_at: Generated<number> };
}
