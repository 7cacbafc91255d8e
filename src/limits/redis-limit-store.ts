import { Redis } from 'ioredis';
import { windowStart, type LimitStore, type RateResult, type ReserveResult } from './limit-store.js';

/**
 * Limits shared by every replica through Redis. Only Redis' exact 64-bit INCRBY/DECRBY do the
 * arithmetic (no Lua doubles), so picodollar sums stay exact. A reservation increments first
 * and checks after; an over-limit one is undone at once — concurrent requests may refuse each
 * other at the edge, but never let more through than the limit.
 */
export class RedisLimitStore implements LimitStore {
  private readonly redis: Redis;

  constructor(url: string, private readonly prefix = 'op:') {
    this.redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
  }

  private spentKey(keyId: string, period: number) {
    return `${this.prefix}spent:${keyId}:${period}`;
  }
  private reservedKey(keyId: string, period: number) {
    return `${this.prefix}reserved:${keyId}:${period}`;
  }

  private async ensureSpent(keyId: string, period: number, loadSpent: () => Promise<bigint>): Promise<void> {
    const key = this.spentKey(keyId, period);
    if ((await this.redis.exists(key)) === 0) {
      const v = await loadSpent();
      await this.redis.set(key, v.toString(), 'EX', 40 * 86_400, 'NX');
    }
  }

  async reserve(keyId: string, period: number, amount: bigint, limit: bigint, loadSpent: () => Promise<bigint>): Promise<ReserveResult> {
    await this.ensureSpent(keyId, period, loadSpent);
    const rKey = this.reservedKey(keyId, period);
    const [[, reservedRaw], [, spentRaw]] = (await this.redis.multi().incrby(rKey, amount.toString()).get(this.spentKey(keyId, period)).expire(rKey, 86_400).exec()) as [[null, number | string], [null, string | null]];
    const reserved = BigInt(String(reservedRaw));
    const spent = BigInt(spentRaw ?? '0');
    if (spent + reserved > limit) {
      await this.redis.decrby(rKey, amount.toString());
      const available = limit - spent - (reserved - amount);
      return { ok: false, availablePico: available > 0n ? available : 0n };
    }
    return { ok: true };
  }

  async settle(keyId: string, period: number, reserved: bigint, actual: bigint): Promise<void> {
    await this.redis.multi().decrby(this.reservedKey(keyId, period), reserved.toString()).incrby(this.spentKey(keyId, period), actual.toString()).exec();
  }

  async spent(keyId: string, period: number, loadSpent: () => Promise<bigint>): Promise<bigint> {
    await this.ensureSpent(keyId, period, loadSpent);
    return BigInt((await this.redis.get(this.spentKey(keyId, period))) ?? '0');
  }

  async hitRequests(keyId: string, limit: number, now: number): Promise<RateResult> {
    const w = windowStart(now);
    const key = `${this.prefix}rpm:${keyId}:${w}`;
    const [[, count]] = (await this.redis.multi().incr(key).pexpire(key, 120_000).exec()) as [[null, number]];
    const resetMs = w + 60_000 - now;
    return { ok: count <= limit, limit, remaining: Math.max(0, limit - count), resetMs };
  }

  async checkTokens(keyId: string, limit: number, now: number): Promise<RateResult> {
    const w = windowStart(now);
    const used = Number((await this.redis.get(`${this.prefix}tpm:${keyId}:${w}`)) ?? '0');
    return { ok: used < limit, limit, remaining: Math.max(0, limit - used), resetMs: w + 60_000 - now };
  }

  async addTokens(keyId: string, tokens: number, now: number): Promise<void> {
    const key = `${this.prefix}tpm:${keyId}:${windowStart(now)}`;
    await this.redis.multi().incrby(key, tokens).pexpire(key, 120_000).exec();
  }

  async close(): Promise<void> {
    await this.redis.quit();
  }
}
