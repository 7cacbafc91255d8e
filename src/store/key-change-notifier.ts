import { randomUUID } from 'node:crypto';
import type { RedisConnection } from '../redis/redis-connection.js';

/**
 * Tells every gateway process that keys changed (created, changed, disabled, deleted), so that
 * their key caches forget what they hold. Lives below `server/`, which owns the cache.
 */
export interface KeyChangeNotifier {
  /** Announce a change to the other processes (without waiting; never throws). */
  notify(): void;
  /** Call `fn` when another process announced a change. */
  onChange(fn: () => void): void;
}

/** In-process: one gateway process has nobody to tell. */
export const localKeyChanges: KeyChangeNotifier = { notify() {}, onChange() {} };

/**
 * Key changes through Redis pub/sub on `<prefix>keys`: a change on one replica clears the key
 * caches of all within the time a message takes (milliseconds). With Redis down the message is
 * lost and the caches' own expiry (`KEY_CACHE_TTL_MS`) bounds how long a change takes.
 */
export class RedisKeyChangeNotifier implements KeyChangeNotifier {
  private readonly origin = randomUUID();
  private readonly channel: string;

  /** `topic`: what changed, the channel's name after the prefix (`keys`; `catalog` for catalog entries). */
  constructor(private readonly redis: RedisConnection, topic = 'keys') {
    this.channel = `${redis.prefix}${topic}`;
  }

  notify(): void {
    this.redis.publish(this.channel, this.origin);
  }

  /**
   * Announce a change and wait for Redis to take it (for the CLI, which exits right after).
   * @throws Error when Redis cannot be reached (the caches then expire within `KEY_CACHE_TTL_MS`).
   */
  async announce(): Promise<void> {
    await this.redis.client.publish(this.channel, this.origin);
  }

  onChange(fn: () => void): void {
    this.redis.subscribe(this.channel, (origin) => {
      if (origin !== this.origin) fn();
    });
  }
}
