import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { GatewayError } from '../errors/gateway-error.js';
import { findKeyByHash, hashSecret, type ApiKey } from '../store/keys.js';
import type { Database } from '../store/schema.js';
import { keySettingsSchema } from '../store/key-settings.js';
import { localKeyChanges, type KeyChangeNotifier } from '../store/key-change-notifier.js';

/**
 * How long a key lookup is cached, in ms. With Redis, changes on any replica clear the cache at
 * once (key-change notifier); this bounds staleness when a notification is lost (Redis down).
 */
export const KEY_CACHE_TTL_MS = 5_000;

/**
 * How long a key's last looked-up state serves its requests while the database cannot be
 * reached, in ms (10 minutes, counted from the last successful lookup). A key not looked up
 * within that time gets `database_unavailable` (503) until the database is back.
 */
export const KEY_LAST_KNOWN_MS = 600_000;

/** Most keys (secret hashes) whose last looked-up state is kept; the least recently looked up go first. */
export const KEY_CACHE_MAX = 10_000;

/**
 * After a failed lookup, how long lookups answer from the last known state without asking the
 * database again, in ms: during an outage a request does not wait for a connection attempt.
 */
const LOOKUP_RETRY_MS = 1_000;

const ADMIN: ApiKey = {
  id: 'admin', name: 'admin', prefix: 'admin', disabled: false, createdAt: 0, expiresAt: null, isAdmin: true,
  settings: keySettingsSchema.parse({}),
  team: null,
};

/**
 * Resolves `Authorization: Bearer` (or `x-api-key`) secrets to keys, with a short cache in front
 * of the database. Each lookup's result is kept as the key's last known state (at most
 * {@link KEY_CACHE_MAX} keys): while the database cannot be reached, a key looked up within
 * {@link KEY_LAST_KNOWN_MS} is served from it (disabled and expired still refused); a change
 * notification forgets them all.
 */
export class KeyResolver {
  private readonly cache = new Map<string, { key: ApiKey | undefined; at: number }>();
  private readonly hashes = new Map<string, string>();
  private readonly adminHash: Buffer | undefined;
  /** Date.now() before which lookups do not ask the database (it just failed). */
  private downUntil = 0;

  constructor(private readonly db: Kysely<Database>, adminKey: string | undefined, private readonly changes: KeyChangeNotifier = localKeyChanges) {
    this.adminHash = adminKey ? Buffer.from(hashSecret(adminKey), 'hex') : undefined;
    changes.onChange(() => {
      this.cache.clear();
      this.changed();
    });
  }

  private readonly listeners: (() => void)[] = [];

  /** Call `fn` after keys changed, here (the key API) or in another process (its notice). */
  onKeysChanged(fn: () => void): void {
    this.listeners.push(fn);
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }

  /**
   * The key of a request.
   * @throws GatewayError `missing_api_key`, `invalid_api_key`, `key_expired`, or
   * `database_unavailable` (503, retryable) when the database cannot be asked and the key has no
   * last known state within {@link KEY_LAST_KNOWN_MS}.
   */
  async authenticate(req: FastifyRequest): Promise<ApiKey> {
    const secret = secretOf(req);
    const cached = this.fromCache(secret);
    if (cached) return cached;
    const hash = this.hashOf(secret);
    let now = Date.now();
    let key: ApiKey | undefined;
    let failure: unknown = now < this.downUntil ? new Error('the database could not be reached a moment ago') : undefined;
    if (failure === undefined) {
      try {
        key = await findKeyByHash(this.db, hash);
      } catch (err) {
        failure = err;
        this.downUntil = Date.now() + LOOKUP_RETRY_MS;
      }
    }
    if (failure !== undefined) {
      now = Date.now();
      const last = this.cache.get(hash);
      if (last && now - last.at <= KEY_LAST_KNOWN_MS) return usable(last.key, now);
      throw new GatewayError('database_unavailable', 'the API key cannot be checked now: the database cannot be reached; retry shortly', { retryAfterSeconds: 1, cause: failure });
    }
    now = Date.now();
    // Most recently looked up last: the oldest entry goes first when the map is full.
    this.cache.delete(hash);
    if (this.cache.size >= KEY_CACHE_MAX) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(hash, { key, at: now });
    return usable(key, now);
  }

  /**
   * The key of a request when it can be told without the database (the admin key, or a
   * lookup cached within {@link KEY_CACHE_TTL_MS}); undefined when the database must be asked.
   * @throws GatewayError `missing_api_key`, `invalid_api_key` or `key_expired`, like {@link authenticate}.
   */
  authenticateCached(req: FastifyRequest): ApiKey | undefined {
    return this.fromCache(secretOf(req));
  }

  /** SHA-256 of a secret, remembered for the secrets seen lately (hashing costs more than the lookup). */
  private hashOf(secret: string): string {
    let hash = this.hashes.get(secret);
    if (hash === undefined) {
      hash = hashSecret(secret);
      if (this.hashes.size >= 10_000) this.hashes.clear();
      this.hashes.set(secret, hash);
    }
    return hash;
  }

  private fromCache(secret: string): ApiKey | undefined {
    const hash = this.hashOf(secret);
    if (this.adminHash && timingSafeEqual(Buffer.from(hash, 'hex'), this.adminHash)) return ADMIN;
    const now = Date.now();
    const entry = this.cache.get(hash);
    if (!entry || now - entry.at > KEY_CACHE_TTL_MS) return undefined;
    return usable(entry.key, now);
  }

  /** Forget cached lookups (after the key API changed a key), here and in every other process. */
  invalidate(): void {
    this.cache.clear();
    this.changes.notify();
    this.changed();
  }
}

/**
 * The secret a request carries: `Authorization: Bearer`, `x-api-key` (Anthropic's clients),
 * `x-goog-api-key` (Google's), or on a route with `keyInQuery` (the Gemini API) the `key` query
 * parameter. An empty header counts as absent (the Gemini CLI in gateway mode sends an empty
 * `x-goog-api-key` beside the real key in a custom header).
 * @throws GatewayError `missing_api_key`.
 */
function secretOf(req: FastifyRequest): string {
  const header = req.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (match) return match[1]!;
  const secret = headerSecret(req.headers['x-api-key']) ?? headerSecret(req.headers['x-goog-api-key']) ?? (req.routeOptions?.config?.keyInQuery === true ? headerSecret((req.query as Record<string, unknown> | undefined)?.key) : undefined);
  if (secret === undefined) {
    throw new GatewayError('missing_api_key', 'send your key as "Authorization: Bearer <key>" (or "x-api-key: <key>"); create one with `opinference keys create --name <name>`');
  }
  return secret;
}

/** A non-empty, trimmed header or query value. */
function headerSecret(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/**
 * A looked-up key, if it may be used now.
 * @throws GatewayError `invalid_api_key` (unknown or disabled) or `key_expired`.
 */
function usable(key: ApiKey | undefined, now: number): ApiKey {
  if (!key) throw new GatewayError('invalid_api_key', 'the API key is not valid');
  if (key.disabled) throw new GatewayError('invalid_api_key', 'the API key is disabled');
  if (key.expiresAt !== null && key.expiresAt <= now) throw new GatewayError('key_expired', 'the API key has expired');
  return key;
}
