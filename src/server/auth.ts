import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { GatewayError } from '../errors/gateway-error.js';
import { findKeyByHash, hashSecret, type ApiKey } from '../store/keys.js';
import type { Database } from '../store/schema.js';
import { localKeyChanges, type KeyChangeNotifier } from '../store/key-change-notifier.js';

/**
 * How long a key lookup is cached, in ms. With Redis, changes on any replica clear the cache at
 * once (key-change notifier); this bounds staleness when a notification is lost (Redis down).
 */
export const KEY_CACHE_TTL_MS = 5_000;

const ADMIN: ApiKey = {
  id: 'admin', name: 'admin', prefix: 'admin', disabled: false, createdAt: 0, expiresAt: null, isAdmin: true,
  settings: { limit: null, limit_reset: 'never', rate_limit: { requests_per_minute: null, tokens_per_minute: null }, allowed_models: [], retention: null, cache: null },
};

/** Resolves `Authorization: Bearer` (or `x-api-key`) secrets to keys, with a short cache in front of the database. */
export class KeyResolver {
  private readonly cache = new Map<string, { key: ApiKey | undefined; at: number }>();
  private readonly hashes = new Map<string, string>();
  private readonly adminHash: Buffer | undefined;

  constructor(private readonly db: Kysely<Database>, adminKey: string | undefined, private readonly changes: KeyChangeNotifier = localKeyChanges) {
    this.adminHash = adminKey ? Buffer.from(hashSecret(adminKey), 'hex') : undefined;
    changes.onChange(() => this.cache.clear());
  }

  /**
   * The key of a request.
   * @throws GatewayError `missing_api_key` or `invalid_api_key`.
   */
  async authenticate(req: FastifyRequest): Promise<ApiKey> {
    const secret = secretOf(req);
    const cached = this.fromCache(secret);
    if (cached) return cached;
    const hash = this.hashOf(secret);
    const now = Date.now();
    const entry = { key: await findKeyByHash(this.db, hash), at: now };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(hash, entry);
    return usable(entry.key, now);
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
  }
}

/**
 * The secret a request carries: `Authorization: Bearer` or `x-api-key`.
 * @throws GatewayError `missing_api_key`.
 */
function secretOf(req: FastifyRequest): string {
    const header = req.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    // Anthropic's clients send `x-api-key` (Claude Code with ANTHROPIC_API_KEY).
    const apiKeyHeader = req.headers['x-api-key'];
    const secret = match ? match[1]! : typeof apiKeyHeader === 'string' && apiKeyHeader.trim() !== '' ? apiKeyHeader.trim() : undefined;
    if (secret === undefined) {
      throw new GatewayError('missing_api_key', 'send your key as "Authorization: Bearer <key>" (or "x-api-key: <key>"); create one with `opinference keys create --name <name>`');
    }
    return secret;
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
