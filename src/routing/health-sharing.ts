import { randomUUID } from 'node:crypto';
import type { RedisConnection, RedisLog } from '../redis/redis-connection.js';
import type { HealthEvent, HealthRegistry } from './endpoint-health.js';

/**
 * How a replica's endpoint health reaches the others. The registry stays the one place that is
 * read (routing, the endpoints route); sharing only carries outcomes between registries.
 */
export interface HealthSharing {
  /** Stop sharing (outcomes stay local from then on). */
  close(): void;
}

/** In-process: nothing to share (one gateway process, or no `OP_REDIS_URL`). */
export const localHealth: HealthSharing = { close() {} };

/** Longest wait before ordinary outcomes (samples for the statistics) are published, in ms. */
export const HEALTH_BATCH_MS = 100;
/** Outcomes kept while waiting to be published; older ones are dropped first. */
const MAX_QUEUED = 1000;

/**
 * Endpoint health shared through Redis pub/sub on `<prefix>health`. Every local outcome is queued
 * (the request path only appends to an array) and published in one message per
 * {@link HEALTH_BATCH_MS}; a failure that opened the breaker or set a cooldown is published at
 * once (next tick). Each replica applies the others' outcomes to its own registry, so reads stay
 * local. With Redis down, outcomes are dropped (health is per replica; logged once) and sharing
 * resumes by itself when Redis answers again; the subscriber resubscribes after reconnecting.
 */
export class RedisHealthSharing implements HealthSharing {
  private readonly origin = randomUUID();
  private readonly channel: string;
  private queue: HealthEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private degraded = false;
  private closed = false;

  constructor(private readonly redis: RedisConnection, private readonly registry: HealthRegistry, private readonly log: RedisLog) {
    this.channel = `${redis.prefix}health`;
    registry.onEvent = (e) => this.enqueue(e);
    redis.subscribe(this.channel, (message) => this.receive(message));
  }

  private enqueue(e: HealthEvent): void {
    if (this.closed) return;
    if (this.queue.length >= MAX_QUEUED) this.queue.shift();
    this.queue.push(e);
    const urgent = e.kind === 'failure' && (e.opened || e.cooldownMs !== undefined);
    if (urgent) {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.flush(), 0);
    } else {
      this.timer ??= setTimeout(() => this.flush(), HEALTH_BATCH_MS);
    }
  }

  private flush(): void {
    this.timer = undefined;
    if (this.queue.length === 0) return;
    const events = this.queue;
    this.queue = [];
    this.redis.publish(this.channel, JSON.stringify({ origin: this.origin, events }), (ok) => {
      if (!ok && !this.degraded) this.log.warn({}, 'endpoint health sharing unavailable (Redis): each replica keeps its own health until Redis answers again');
      else if (ok && this.degraded) this.log.info({}, 'endpoint health sharing resumed');
      this.degraded = !ok;
    });
  }

  private receive(message: string): void {
    let parsed: { origin?: unknown; events?: unknown };
    try {
      parsed = JSON.parse(message) as typeof parsed;
    } catch {
      return;
    }
    if (parsed.origin === this.origin || !Array.isArray(parsed.events)) return;
    for (const e of parsed.events as HealthEvent[]) {
      if (e && typeof e.endpoint === 'string' && (e.kind === 'success' || e.kind === 'failure')) this.registry.applyRemote(e);
    }
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.registry.onEvent = undefined;
  }
}
