/**
 * Where the exact response cache keeps its answers: an interface with one implementation per
 * backend, like the limit store — Redis when `OP_REDIS_URL` is set (shared by every replica),
 * else the embedded database. Values are opaque JSON text; keys are hashes
 * (src/cache/cache-key.ts). Every bound is the store's: entries larger than `maxEntryBytes` are
 * not stored, the oldest go when all entries pass `maxTotalBytes` (Redis: its own `maxmemory`
 * policy and the TTL), and an entry lives at most its TTL.
 */
export interface ResponseCacheStore {
  /** The value under `key`, or null when absent or expired (Redis: also while it is unavailable, at once). */
  get(key: string): Promise<string | null>;
  /** Store `value` under `key` for `ttlMs` ms; a value larger than the entry bound is skipped. */
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /**
   * Remove the entry under `key` (absent is fine). Unlike a read it never fails quietly: it
   * throws when the store cannot be reached, so a caller that must forget text knows it did not.
   */
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}

/** Size bounds of a store, in bytes. */
export interface CacheBounds {
  maxEntryBytes: number;
  maxTotalBytes: number;
}
