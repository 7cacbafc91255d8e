import { windowStart, type LimitStore, type RateResult, type ReserveResult } from './limit-store.js';

interface Credit {
  period: number;
  spent: bigint;
  reserved: bigint;
  loading?: Promise<void>;
}

/**
 * Limits in this process. Check-and-update steps run without an `await` between them, so they
 * are exact under any concurrency within the process.
 */
export class MemoryLimitStore implements LimitStore {
  private readonly credits = new Map<string, Credit>();
  private readonly requests = new Map<string, { window: number; count: number }>();
  private readonly tokens = new Map<string, { window: number; count: number }>();

  private async credit(keyId: string, period: number, loadSpent: () => Promise<bigint>): Promise<Credit> {
    let c = this.credits.get(keyId);
    if (!c || c.period !== period) {
      const fresh: Credit = { period, spent: 0n, reserved: 0n };
      fresh.loading = loadSpent().then(
        (v) => {
          fresh.spent += v;
          delete fresh.loading;
        },
        (err: unknown) => {
          // The spend could not be read (the database down): the next request reads it again.
          if (this.credits.get(keyId) === fresh) this.credits.delete(keyId);
          throw err;
        },
      );
      this.credits.set(keyId, fresh);
      c = fresh;
    }
    if (c.loading) await c.loading;
    return c;
  }

  async reserve(keyId: string, period: number, amount: bigint, limit: bigint, loadSpent: () => Promise<bigint>): Promise<ReserveResult> {
    const c = await this.credit(keyId, period, loadSpent);
    const available = limit - c.spent - c.reserved;
    if (amount > available) return { ok: false, availablePico: available > 0n ? available : 0n };
    c.reserved += amount;
    return { ok: true, token: '' };
  }

  async settle(keyId: string, period: number, reserved: bigint, actual: bigint, _token: string): Promise<void> {
    const c = this.credits.get(keyId);
    if (!c || c.period !== period) return;
    c.reserved -= reserved;
    c.spent += actual;
  }

  async spent(keyId: string, period: number, loadSpent: () => Promise<bigint>): Promise<bigint> {
    return (await this.credit(keyId, period, loadSpent)).spent;
  }

  private window(map: Map<string, { window: number; count: number }>, keyId: string, now: number) {
    const w = windowStart(now);
    let e = map.get(keyId);
    if (!e || e.window !== w) {
      e = { window: w, count: 0 };
      map.set(keyId, e);
    }
    return e;
  }

  async hitRequests(keyId: string, limit: number, now: number): Promise<RateResult> {
    const e = this.window(this.requests, keyId, now);
    const resetMs = e.window + 60_000 - now;
    if (e.count >= limit) return { ok: false, limit, remaining: 0, resetMs };
    e.count++;
    return { ok: true, limit, remaining: limit - e.count, resetMs };
  }

  async checkTokens(keyId: string, limit: number, now: number): Promise<RateResult> {
    const e = this.window(this.tokens, keyId, now);
    return { ok: e.count < limit, limit, remaining: Math.max(0, limit - e.count), resetMs: e.window + 60_000 - now };
  }

  async addTokens(keyId: string, tokens: number, now: number): Promise<void> {
    this.window(this.tokens, keyId, now).count += tokens;
  }

  async ping(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {}
}
