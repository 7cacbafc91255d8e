import { createHash } from 'node:crypto';

/**
 * The exact response cache's key and policy, pure functions. A key covers the key's scope (a key
 * never sees another key's answers unless `cache.shared_scopes` puts them together), the client
 * API, the model, the routing fields and a SHA-256 of the canonical body (object keys sorted);
 * fields that do not change the answer (`stream`, `stream_options`, `op`) are left out, so a
 * streamed and a complete request share their answer.
 */

/** Fields of a request body that do not take part in the hash. */
const IGNORED = new Set(['stream', 'stream_options', 'op']);

/** JSON with object keys in sorted order at every depth (arrays keep their order). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

/** The cache scope of a key: the shared scope it belongs to, else its own id (`admin` for the admin key). */
export function cacheScope(keyId: string | null, sharedScopes: readonly (readonly string[])[]): string {
  if (keyId === null) return 'admin';
  const i = sharedScopes.findIndex((s) => s.includes(keyId));
  return i >= 0 ? `shared:${i}` : `key:${keyId}`;
}

/** The cache key (hex SHA-256) of a request body in a scope and client API, with the headers the API forwards upstream (`forwarded`, lower-case names) when any were sent. */
export function cacheKey(scope: string, api: string, body: Record<string, unknown>, forwarded: Readonly<Record<string, string>> = {}): string {
  const hashed: Record<string, unknown> = {};
  for (const k of Object.keys(body)) if (!IGNORED.has(k)) hashed[k] = body[k];
  // Headers the API forwards upstream (Anthropic's `anthropic-beta`, `anthropic-version`) change
  // the answer: they are part of the key when sent.
  const headers = Object.keys(forwarded).length > 0 ? `\n${canonicalJson(forwarded)}` : '';
  return createHash('sha256').update(`${scope}\n${api}\n${canonicalJson(hashed)}${headers}`).digest('hex');
}

/** Who may ask for caching, each a boolean or a TTL in seconds. */
export interface CacheAsk {
  /** `op.cache` or the `x-op-cache` header. */
  request: boolean | undefined;
  /** `op.cache_ttl`, seconds. */
  requestTtl: number | undefined;
  /** The key's `cache` setting. */
  key: boolean | number | null | undefined;
  /** The model's `cache` in config. */
  model: boolean | number | undefined;
}

/**
 * The TTL in seconds when caching applies to a request, else undefined: the request's own
 * answer wins (`op.cache: false` turns it off), then the key's, then the model's; retention
 * `none` is never cached (a cache holds text). Bounded by `maxTtl`.
 */
export function cacheTtlSeconds(ask: CacheAsk, retentionNone: boolean, defaultTtl: number, maxTtl: number): number | undefined {
  if (retentionNone) return undefined;
  const setting = ask.request ?? (ask.key ?? undefined) ?? ask.model;
  if (!setting) return undefined;
  const ttl = ask.requestTtl ?? (typeof setting === 'number' ? setting : typeof ask.key === 'number' ? ask.key : typeof ask.model === 'number' ? ask.model : defaultTtl);
  return Math.min(ttl, maxTtl);
}
