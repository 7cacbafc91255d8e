// The gateway's JSON API as the pages use it: every call carries the signed-in key.

const STORAGE_KEY = 'opinference.key';

/** An error answer of the gateway (`{error:{code,message,param}}`) or a network failure. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

export const session = {
  key(): string | null {
    return sessionStorage.getItem(STORAGE_KEY);
  },
  save(key: string): void {
    sessionStorage.setItem(STORAGE_KEY, key);
  },
  clear(): void {
    sessionStorage.removeItem(STORAGE_KEY);
  },
};

/**
 * Single sign-on (OpenID Connect): with no key saved, calls authenticate by the gateway's
 * HTTP-only session cookie; state-changing ones carry the session's CSRF token.
 */
export const sso = {
  csrf: null as string | null,
};

/** The signed-in user of a single sign-on session (`GET /auth/me`). */
export interface SsoUser {
  sub: string;
  name: string;
  email: string | null;
  roles: string[];
  is_admin: boolean;
  manages_keys: boolean;
  teams: { id: string; name: string; role: 'team_admin' | 'viewer' }[];
  csrf_token: string;
  expires_at: string;
}

/**
 * The single sign-on state: `configured` when the gateway offers it (`/auth/me` exists), and the
 * user when the browser has a valid session.
 */
export async function ssoState(): Promise<{ configured: boolean; user: SsoUser | null }> {
  try {
    const { data, sso_enabled } = await request<{ data: SsoUser | null; sso_enabled: boolean }>('GET', '/auth/me', { key: '' });
    sso.csrf = data?.csrf_token ?? null;
    return { configured: sso_enabled, user: data };
  } catch (err) {
    // A session cookie the gateway no longer accepts (another secret): sign in again.
    if (err instanceof ApiError && err.status === 401) return { configured: true, user: null };
    // An older gateway without /auth/me: keys only.
    if (err instanceof ApiError && err.status === 404) return { configured: false, user: null };
    throw err;
  }
}

/** End the single sign-on session; returns the provider's logout URL when it has one. */
export async function ssoLogout(): Promise<string | null> {
  const { data } = await request<{ data: { end_session_url: string | null } }>('POST', '/auth/logout', { key: '' });
  sso.csrf = null;
  return data.end_session_url;
}

/** Called when a data call is refused for the key itself (revoked, disabled, expired). */
let onAuthLost: (err: ApiError) => void = () => {};
export function setAuthLostHandler(fn: (err: ApiError) => void): void {
  onAuthLost = fn;
}

type Query = Record<string, string | number | null | undefined>;

function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

/** Call the API with an explicit key (sign-in) or the saved one. */
export async function request<T>(method: string, path: string, options: { query?: Query; body?: unknown; key?: string } = {}): Promise<T> {
  const key = options.key ?? session.key();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  else if (sso.csrf && method !== 'GET' && method !== 'HEAD') headers['x-csrf-token'] = sso.csrf;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(withQuery(path, options.query), { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body), cache: 'no-store' });
  } catch (err) {
    throw new ApiError(0, 'network_error', `the gateway did not answer (${err instanceof Error ? err.message : String(err)})`);
  }
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: reported below
  }
  if (!res.ok) {
    const e = (json as { error?: { code?: string; message?: string; param?: string | null } } | undefined)?.error;
    const err = new ApiError(res.status, e?.code ?? `http_${res.status}`, e?.message ?? `HTTP ${res.status} ${res.statusText}`, e?.param ?? null);
    if (options.key === undefined && (res.status === 401 || err.code === 'invalid_api_key' || err.code === 'key_expired' || err.code === 'session_invalid')) onAuthLost(err);
    throw err;
  }
  if (json === undefined) throw new ApiError(res.status, 'invalid_response', `expected JSON from ${path}`);
  return json as T;
}

export const get = <T>(path: string, query?: Query) => request<T>('GET', path, { query });

// ---- Shapes of the answers (only the fields the pages read) ----

export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
}

export interface KeyInfo {
  id: string;
  name: string;
  label?: string;
  is_admin?: boolean;
  disabled?: boolean;
  /** USD: decimal strings from `/v1/keys`, numbers from `/v1/key` (OpenRouter's type). */
  limit: string | number | null;
  limit_reset?: 'daily' | 'weekly' | 'monthly' | 'never' | null;
  limit_remaining: string | number | null;
  usage?: string | number;
  usage_daily?: string | number;
  usage_weekly?: string | number;
  usage_monthly?: string | number;
  usage_total?: string;
  rate_limit: { requests_per_minute: number | null; tokens_per_minute: number | null } | null;
  allowed_models?: string[];
  retention?: 'none' | number | null;
  expires_at?: string | null;
  created_at?: string;
  /** Signed in through single sign-on (no key): the user's roles decide. */
  sso?: boolean;
  /** Single sign-on: the admin or a team_admin role (may create and change keys). */
  manages_keys?: boolean;
  /** Single sign-on: the mapped roles (`admin`, `team_admin:<team>`, `viewer:<team>`). */
  roles?: string[];
}

export interface UsageStats {
  requests: number;
  /** Failed at a provider or in the gateway. */
  errors: number;
  /** Refused for the request's or key's own reason (a 400 validation error, a key limit …), no provider answering. */
  refused: number;
  cancelled: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  cached_tokens: number;
  cost: string;
  latency_ms: Percentiles | null;
  ttft_ms: Percentiles | null;
}

export interface UsageRow extends UsageStats {
  bucket: string;
  group: string | null;
}

export interface UsageResult {
  data: UsageRow[];
  totals: UsageStats;
  from: string;
  to: string;
  bucket: 'minute' | 'hour' | 'day';
  group_by: string | null;
}

export interface Attempt {
  endpoint: string;
  provider: string;
  model: string;
  status: number | null;
  error_code: string | null;
  latency_ms: number;
  reason: string;
  /** The label of the provider's `api_keys` entry used (never the key); absent with one key. */
  credential?: string;
}

export interface MessagePart {
  type: string;
  text?: string;
  image_url?: { url?: string } | string;
  [k: string]: unknown;
}

export interface StoredMessage {
  role: string;
  content?: string | MessagePart[] | null;
  name?: string;
  tool_calls?: unknown;
  tool_call_id?: string;
  [k: string]: unknown;
}

export interface Generation {
  id: string;
  request_id: string;
  created_at: string;
  /** Null for the admin key (OP_ADMIN_KEY). */
  api_key_id: string | null;
  model: string;
  requested_model: string;
  provider_name: string | null;
  endpoint: string | null;
  upstream_model: string | null;
  status: 'success' | 'error' | 'cancelled' | string;
  /** An error that is the client's own (invalid, over a limit, unknown model): shown as `refused`. */
  refused?: boolean;
  error_code: string | null;
  error_message: string | null;
  http_status: number | null;
  finish_reason: string | null;
  native_finish_reason: string | null;
  api_type: string;
  streamed: boolean;
  cancelled: boolean;
  tokens_prompt: number | null;
  tokens_completion: number | null;
  native_tokens_reasoning: number | null;
  native_tokens_cached: number | null;
  usage_source: string | null;
  /** A USD decimal string in lists; a number of USD from `GET /v1/generation` (OpenRouter's type). */
  total_cost: string | number;
  /** The exact cost as a decimal string (USD); `total_cost` is a number in OpenRouter's shape. */
  total_cost_usd?: string;
  latency: number | null;
  time_to_first_token: number | null;
  tags: string[];
  session_id: string | null;
  retention: 'none' | number;
  provider_responses?: Attempt[];
  /** The `api_keys` label that served; null for a provider with one key. */
  credential?: string | null;
  dropped_parameters?: string[];
  content?: {
    request?: { messages?: StoredMessage[]; prompt?: string | string[] };
    output?: { content?: string | null; reasoning?: string | null; tool_calls?: unknown };
  } | null;
}

export interface GenerationPage {
  data: Generation[];
  next_cursor: string | null;
}

export interface Pricing {
  prompt: string;
  completion: string;
  request?: string;
  input_cache_read?: string;
  input_cache_write?: string;
}

export interface Model {
  id: string;
  name: string;
  description?: string;
  context_length: number;
  pricing: Pricing;
  supported_parameters: string[];
  architecture?: { modality?: string; input_modalities?: string[]; output_modalities?: string[]; tokenizer?: string };
  top_provider?: { context_length: number; max_completion_tokens: number | null };
}

export interface Endpoint {
  tag: string;
  name?: string;
  provider_name: string;
  provider_kind: string;
  upstream_model: string;
  context_length: number;
  max_completion_tokens: number | null;
  pricing: Pricing;
  quantization: string;
  supported_parameters: string[];
  status: number;
  circuit: 'closed' | 'open' | 'half-open' | string;
  uptime_last_5m: number | null;
  uptime_last_30m: number | null;
  latency_last_30m: Percentiles | null;
  throughput_last_30m: Percentiles | null;
  requests_last_30m: number;
  cooldown_until: string | null;
  /** `rate_limit` after a 429, `retry_after` after another failure sent with Retry-After. */
  cooldown_reason?: 'rate_limit' | 'retry_after' | null;
}

export interface ModelEndpoints {
  id: string;
  name: string;
  description?: string;
  endpoints: Endpoint[];
}

/** `GET /v1/mcp/servers`: a server of the key's view, its tools or why they could not be listed. */
export interface McpServer {
  id: string;
  transport: string;
  tools: string[] | null;
  error: string | null;
  latency_ms: number;
}

/** One group of `GET /v1/mcp/calls/summary`. */
export interface McpCallGroup {
  server: string;
  tool: string;
  key_id?: string;
  calls: number;
  ok: number;
  tool_errors: number;
  errors: number;
  refused: number;
  p50_latency_ms: number;
  p95_latency_ms: number;
}

/** One record of `GET /v1/mcp/calls`. */
export interface McpCall {
  id: string;
  created_at: string;
  key_id: string;
  server: string;
  tool: string;
  status: string;
  error: { code: string; message: string | null } | null;
  latency_ms: number;
}
