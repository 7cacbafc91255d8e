import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { CacheBounds, ResponseCacheStore } from './response-cache-store.js';

/**
 * The response cache in the embedded database (table `response_cache`; portable kysely only, so
 * SQLite and PostgreSQL both work). Expired rows are never returned and are deleted when the
 * total size passes its bound, with the oldest rows after them.
 */
export class DatabaseResponseCacheStore implements ResponseCacheStore {
  private total: number | undefined;

  constructor(private readonly db: Kysely<Database>, private readonly bounds: CacheBounds, private readonly now: () => number = Date.now) {}

  async get(key: string): Promise<string | null> {
    const row = await this.db.selectFrom('response_cache').select(['value', 'expires_at']).where('cache_key', '=', key).executeTakeFirst();
    if (!row || Number(row.expires_at) <= this.now()) return null;
    return row.value;
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    const size = Buffer.byteLength(value);
    if (size > this.bounds.maxEntryBytes) return;
    const now = this.now();
    await this.db.deleteFrom('response_cache').where('cache_key', '=', key).execute();
    await this.db.insertInto('response_cache').values({ cache_key: key, value, size_bytes: size, created_at: now, expires_at: now + ttlMs }).execute();
    this.total = (this.total ?? (await this.totalBytes()) - size) + size;
    if (this.total > this.bounds.maxTotalBytes) await this.evict(now);
  }

  async delete(key: string): Promise<void> {
    const res = await this.db.deleteFrom('response_cache').where('cache_key', '=', key).executeTakeFirst();
    // The running total is read again at the next write.
    if (Number(res.numDeletedRows) > 0) this.total = undefined;
  }

  private async totalBytes(): Promise<number> {
    const row = await this.db.selectFrom('response_cache').select((eb) => eb.fn.sum<number | string | null>('size_bytes').as('total')).executeTakeFirst();
    return Number(row?.total ?? 0);
  }

  /** Delete expired rows, then the oldest until the total is within three quarters of its bound. */
  private async evict(now: number): Promise<void> {
    await this.db.deleteFrom('response_cache').where('expires_at', '<=', now).execute();
    let total = await this.totalBytes();
    while (total > this.bounds.maxTotalBytes * 0.75) {
      const oldest = await this.db.selectFrom('response_cache').select(['cache_key', 'size_bytes']).orderBy('created_at').limit(100).execute();
      if (oldest.length === 0) break;
      const keys: string[] = [];
      for (const r of oldest) {
        keys.push(r.cache_key);
        total -= Number(r.size_bytes);
        if (total <= this.bounds.maxTotalBytes * 0.75) break;
      }
      await this.db.deleteFrom('response_cache').where('cache_key', 'in', keys).execute();
    }
    this.total = total;
  }

  async close(): Promise<void> {}
}
