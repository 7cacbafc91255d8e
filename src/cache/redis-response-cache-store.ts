import type { Redis } from 'ioredis';
import type { CacheBounds, ResponseCacheStore } from './response-cache-store.js';

/**
 * The response cache in Redis, shared by every replica: one string per entry with its TTL
 * (`SET … PX`). The connection is given (one owner of the Redis connection for the gateway);
 * the total size is bounded by Redis's own memory policy and the TTLs.
 */
export class RedisResponseCacheStore implements ResponseCacheStore {
  constructor(private readonly redis: Redis, private readonly bounds: CacheBounds, private readonly prefix = 'op:cache:') {}

  get(key: string): Promise<string | null> {
    return this.redis.get(this.prefix + key);
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    if (Buffer.byteLength(value) > this.bounds.maxEntryBytes) return;
    await this.redis.set(this.prefix + key, value, 'PX', Math.max(1, Math.round(ttlMs)));
  }

  async close(): Promise<void> {}
}
