import type { Redis } from 'ioredis';
import { GatewayError } from '../errors/gateway-error.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import { windowStart, type LimitStore, type RateResult, type ReserveResult } from './limit-store.js';

/** Reservations live in 10-minute slots that expire after 30 minutes, so those of a replica that
 * died mid-request stop holding credit back within half an hour. */
const SLOT_MS = 600_000;
const SLOT_TTL_S = 1800;

/**
 * Limits shared by every replica through Redis. Only Redis' exact 64-bit INCRBY/DECRBY do the
 * arithmetic (no Lua doubles), so picodollar sums stay exact. A reservation increments first
 * and checks after; an over-limit one is undone at once — concurrent requests may refuse each
 * other at the edge, but never let more through than the limit. Reservations are counted per
 * time slot (the current and the two before it), so a crashed replica's reservations expire.
 *
 * The connection belongs to {@link RedisConnection} (one per process, with command timeouts);
 * while it is unavailable every call fails at once with `limits_unavailable`.
 */
export class RedisLimitStore implements LimitStore {
  private readonly redis: Redis;

  constructor(private readonly connection: RedisConnection, private readonly prefix = 'op:') {
    this.redis = connection.client;
  }

  ping(): Promise<boolean> {
    return this.connection.ping();
  }

  private spentKey(keyId: string, period: number) {
    return `${this.prefix}spent:${keyId}:${period}`;
  }
  private reservedKey(keyId: string, period: number, slot: number) {
    return `${this.prefix}reserved:${keyId}:${period}:${slot}`;
  }

  private async ensureSpent(keyId: string, period: number, loadSpent: () => Promise<bigint>): Promise<void> {
    const key = this.spentKey(keyId, period);
    if ((await this.redis.exists(key)) === 0) {
      const v = await loadSpent();
      await this.redis.set(key, v.toString(), 'EX', 40 * 86_400, 'NX');
    }
  }

  private async reserveImpl(keyId: string, period: number, amount: bigint, limit: bigint, loadSpent: () => Promise<bigint>): Promise<ReserveResult> {
    await this.ensureSpent(keyId, period, loadSpent);
    const slot = Math.floor(Date.now() / SLOT_MS);
    const rKey = this.reservedKey(keyId, period, slot);
    const res = (await this.redis
      .multi()
      .incrby(rKey, amount.toString())
      .expire(rKey, SLOT_TTL_S)
      .get(this.spentKey(keyId, period))
      .get(this.reservedKey(keyId, period, slot - 1))
      .get(this.reservedKey(keyId, period, slot - 2))
      .exec()) as [null, unknown][];
    const own = BigInt(String(res[0]![1]));
    const spent = BigInt((res[2]![1] as string | null) ?? '0');
    const older = BigInt((res[3]![1] as string | null) ?? '0') + BigInt((res[4]![1] as string | null) ?? '0');
    const reserved = own + older;
    if (spent + reserved > limit) {
      await this.redis.decrby(rKey, amount.toString());
      const available = limit - spent - (reserved - amount);
      return { ok: false, availablePico: available > 0n ? available : 0n };
    }
    return { ok: true, token: rKey };
  }

  private async settleImpl(keyId: string, period: number, reserved: bigint, actual: bigint, token: string): Promise<void> {
    const m = this.redis.multi();
    if (token && reserved > 0n) m.decrby(token, reserved.toString());
    await m.incrby(this.spentKey(keyId, period), actual.toString()).exec();
  }

  private async spentImpl(keyId: string, period: number, loadSpent: () => Promise<bigint>): Promise<bigint> {
    await this.ensureSpent(keyId, period, loadSpent);
    return BigInt((await this.redis.get(this.spentKey(keyId, period))) ?? '0');
  }

  private async hitRequestsImpl(keyId: string, limit: number, now: number): Promise<RateResult> {
    const w = windowStart(now);
    const key = `${this.prefix}rpm:${keyId}:${w}`;
    const [[, count]] = (await this.redis.multi().incr(key).pexpire(key, 120_000).exec()) as [[null, number]];
    const resetMs = w + 60_000 - now;
    return { ok: count <= limit, limit, remaining: Math.max(0, limit - count), resetMs };
  }

  private async checkTokensImpl(keyId: string, limit: number, now: number): Promise<RateResult> {
    const w = windowStart(now);
    const used = Number((await this.redis.get(`${this.prefix}tpm:${keyId}:${w}`)) ?? '0');
    return { ok: used < limit, limit, remaining: Math.max(0, limit - used), resetMs: w + 60_000 - now };
  }

  private async addTokensImpl(keyId: string, tokens: number, now: number): Promise<void> {
    const key = `${this.prefix}tpm:${keyId}:${windowStart(now)}`;
    await this.redis.multi().incrby(key, tokens).pexpire(key, 120_000).exec();
  }

  /** Run a Redis operation; a connection failure becomes the catalog's `limits_unavailable`. */
  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.connection.available) {
      throw new GatewayError('limits_unavailable', 'the shared limit store (Redis) cannot be reached; retry shortly', { retryAfterSeconds: 1 });
    }
    try {
      return await fn();
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      const timedOut = this.connection.noteFailure(err);
      const why = timedOut ? 'does not answer (redis.command_timeout_ms)' : 'cannot be reached';
      throw new GatewayError('limits_unavailable', `the shared limit store (Redis) ${why}; retry shortly`, { cause: err, retryAfterSeconds: 1 });
    }
  }

  reserve(keyId: string, period: number, amount: bigint, limit: bigint, loadSpent: () => Promise<bigint>): Promise<ReserveResult> {
    return this.guard(() => this.reserveImpl(keyId, period, amount, limit, loadSpent));
  }
  settle(keyId: string, period: number, reserved: bigint, actual: bigint, token: string): Promise<void> {
    return this.guard(() => this.settleImpl(keyId, period, reserved, actual, token));
  }
  spent(keyId: string, period: number, loadSpent: () => Promise<bigint>): Promise<bigint> {
    return this.guard(() => this.spentImpl(keyId, period, loadSpent));
  }
  hitRequests(keyId: string, limit: number, now: number): Promise<RateResult> {
    return this.guard(() => this.hitRequestsImpl(keyId, limit, now));
  }
  checkTokens(keyId: string, limit: number, now: number): Promise<RateResult> {
    return this.guard(() => this.checkTokensImpl(keyId, limit, now));
  }
  addTokens(keyId: string, tokens: number, now: number): Promise<void> {
    return this.guard(() => this.addTokensImpl(keyId, tokens, now));
  }

  /** Nothing to release: the connection is closed by its owner ({@link RedisConnection}). */
  async close(): Promise<void> {}
}
