/**
 * Shared state behind key limits: credit reservations and spend per period, and fixed
 * one-minute windows for request and token rate limits. In-process by default; Redis when
 * `OP_REDIS_URL` is set so replicas share it. Money is picodollars (bigint).
 */

/** The outcome of a credit reservation. */
export type ReserveResult = { ok: true; token: string } | { ok: false; availablePico: bigint };

/** The outcome of counting a request in a rate window. */
export interface RateResult {
  ok: boolean;
  limit: number;
  remaining: number;
  /** Ms until the window resets. */
  resetMs: number;
}

export interface LimitStore {
  /**
   * Reserve `amountPico` against `limitPico` for the key's current period, if spent + reserved +
   * amount stays within the limit. `loadSpent` gives the period's spend from the database the
   * first time a period is seen.
   */
  reserve(keyId: string, periodStart: number, amountPico: bigint, limitPico: bigint, loadSpent: () => Promise<bigint>): Promise<ReserveResult>;
  /** Release a reservation (by the `token` reserve gave) and add the real cost to the period's spend. */
  settle(keyId: string, periodStart: number, reservedPico: bigint, actualPico: bigint, token: string): Promise<void>;
  /** Spend recorded for the period (settled costs). */
  spent(keyId: string, periodStart: number, loadSpent: () => Promise<bigint>): Promise<bigint>;
  /** Count one request in the current minute; refused once `limit` were counted. */
  hitRequests(keyId: string, limit: number, now: number): Promise<RateResult>;
  /** Whether the minute's token count is under `limit` (without adding). */
  checkTokens(keyId: string, limit: number, now: number): Promise<RateResult>;
  /** Add tokens a finished request used to the minute's count. */
  addTokens(keyId: string, tokens: number, now: number): Promise<void>;
  /** Whether the store can be reached (for `/ready`). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** Start (unix ms, UTC) of the period a reset schedule is in. */
export function periodStart(reset: 'daily' | 'weekly' | 'monthly' | 'never', now: number): number {
  const d = new Date(now);
  switch (reset) {
    case 'never':
      return 0;
    case 'daily':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    case 'weekly': {
      const day = (d.getUTCDay() + 6) % 7; // Monday = 0
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - day);
    }
    case 'monthly':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  }
}

/** Start of the one-minute rate window `now` falls in. */
export const windowStart = (now: number): number => Math.floor(now / 60_000) * 60_000;
