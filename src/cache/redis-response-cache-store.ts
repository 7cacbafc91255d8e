import type { Redis } from 'ioredis';
import type { RedisConnection } from '../redis/redis-connection.js';
import type { CacheBounds, ResponseCacheStore } from './response-cache-store.js';

/**
 * The response cache in Redis, shared by every replica: one string per entry with its TTL
 * (`SET … PX`). The connection belongs to {@link RedisConnection} (one per process, with command
 * timeouts); the total size is bounded by Redis's own memory policy and the TTLs.
 *
 * It fails fast like the limit store: a command that fails is noted on the connection (a
 * timeout marks it unavailable until a PING answers), and while the connection is unavailable
 * a read is a miss at once (null) and a write is skipped, so a frozen Redis costs one request
 * one command timeout, not every cached request.
 */
export class RedisResponseCacheStore implements ResponseCacheStore {
  private readonly redis: Redis;

  constructor(private readonly connection: RedisConnection, private readonly bounds: CacheBounds, private readonly prefix = 'op:cache:') {
    this.redis = connection.client;
  }

  /** The entry, or null when absent, expired or while Redis is unavailable. @throws the command's error (noted on the connection). */
  get(key: string): Promise<string | null> {
    if (!this.connection.available) return Promise.resolve(null);
    return this.redis.get(this.prefix + key).catch((err: unknown) => this.failed(err));
  }

  /** Store the entry; skipped while Redis is unavailable. @throws the command's error (noted on the connection). */
  async set(key: string, value: string, ttlMs: number): Promise<void> {
    if (Buffer.byteLength(value) > this.bounds.maxEntryBytes || !this.connection.available) return;
    await this.redis.set(this.prefix + key, value, 'PX', Math.max(1, Math.round(ttlMs))).catch((err: unknown) => this.failed(err));
  }

  /** Delete the entry. @throws an `Error` at once while Redis is unavailable, else the command's error (noted on the connection). */
  async delete(key: string): Promise<void> {
    if (!this.connection.available) throw new Error('the response cache (Redis) is unavailable');
    await this.redis.del(this.prefix + key).catch((err: unknown) => this.failed(err));
  }

  private failed(err: unknown): never {
    this.connection.noteFailure(err);
    throw err;
  }

  /** Nothing to release: the connection is closed by its owner ({@link RedisConnection}). */
  async close(): Promise<void> {}
}
