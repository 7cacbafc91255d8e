import { createHmac } from 'node:crypto';
import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import { picoToUsdString } from '../accounting/cost.js';
import type { AlertsConfig } from '../config/alerts-schema.js';
import { claimDelivery, dueDeliveries, finishAttempt, listAlertWebhooks, recordAlertEvent, transitionAlertState, type AlertWebhook, type ClaimedDelivery } from '../store/alerts.js';
import { getKey } from '../store/keys.js';
import type { Database } from '../store/schema.js';
import { randomId } from '../util/ids.js';
import { getTeam } from '../store/teams.js';
import { slackMessage } from './slack-format.js';

/**
 * Alerts (issue 23 item 5): what the request path and the background report (a credit limit
 * spent into, a breaker opening or closing, records that cannot be written) goes into an
 * in-process queue ({@link AlertSink}: synchronous, allocation-light); a drain off the request
 * path turns it into events, recorded once across every process sharing the database (the
 * unique dedupe key of `alert_events`, store/alerts.ts), and sends each event's deliveries: JSON
 * or Slack, HMAC-SHA256 signed, retried with exponential backoff up to `alerts.max_attempts`,
 * each claimed row by row so one process sends it.
 * @see docs/governance.md#alerts
 */

/** A credit limit the request path settled against (the fields of pipeline's `CreditLimit` alerts read). */
export interface SpendNote {
  level: 'key' | 'team' | 'end_user';
  /** The key's or team's id. */
  id: string;
  limitPico: bigint;
  /** Start of the limit's current period (unix ms). */
  periodStart: number;
}

/** What the request path and the health registry tell alerts. Every method returns at once. */
export interface AlertSink {
  /** A reservation against `credit` was settled: its spend may have crossed a budget fraction. */
  noteSpend(credit: SpendNote): void;
  /** An endpoint's breaker opened or closed in this process. */
  breaker(endpoint: string, state: 'open' | 'closed'): void;
  /** A generation of catalog model `model` finished; `failed`: it failed with a 5xx. */
  noteOutcome(model: string, failed: boolean): void;
}

/** An alert sink that drops everything (no gateway running alerts). */
export const NO_ALERTS: AlertSink = { noteSpend: () => {}, breaker: () => {}, noteOutcome: () => {} };

/** Minimal logger (pino-compatible). */
export interface AlertLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What the dispatcher reads from the gateway. */
export interface AlertDeps {
  db: Kysely<Database>;
  config: () => AlertsConfig;
  log: AlertLog;
  /** The spend of a credit limit's period, in picodollars (the limit store, and the records without Redis). */
  spent: (credit: SpendNote) => Promise<bigint>;
  /** Why generation records cannot be written now, or null (the record writer's `problem`). */
  recordsProblem: () => string | null;
  /** Clock (tests). */
  now?: () => number;
}

/** Counters (tests, `/metrics` later): events recorded here, events another process (or this one) recorded first, attempts. */
export interface AlertStats {
  recorded: number;
  duplicates: number;
  delivered: number;
  retried: number;
  failed: number;
}

interface QueuedEvent {
  type: string;
  data: Record<string, unknown>;
  createdAt: number;
  /** The dedupe key, or a fleet-wide subject whose state change makes it (`breaker:<endpoint>`). */
  dedupeKey?: string;
  subject?: { name: string; state: string };
}

/** Buckets a model's error-rate window is counted in. */
const RATE_BUCKETS = 10;

/** A model's outcomes in time buckets (`[bucket start ms, finished, failed]`, oldest first) and its last verdict. */
interface ModelOutcomes {
  buckets: [number, number, number][];
  high: boolean;
}

/** Most dedupe keys remembered locally (budget crossings already handled in this process). */
const SEEN_MAX = 10_000;
/** How long after the first note in a batch the drain runs, in ms (notes of a burst are coalesced). */
const DRAIN_DELAY_MS = 100;
/** How often the record writer's state is looked at, in ms. */
const RECORDS_CHECK_MS = 1_000;

/** The HMAC-SHA256 signature header value of a body sent at `timestamp` (unix seconds): `sha256=<hex of HMAC(secret, "<timestamp>.<body>")>`. */
export function signAlert(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** The delay before attempt `attempt + 1` after `attempt` failed, in ms: `retry_base_ms · 2^(attempt-1)`, at most `retry_max_ms`. */
export function retryDelayMs(config: Pick<AlertsConfig, 'retry_base_ms' | 'retry_max_ms'>, attempt: number): number {
  return Math.min(config.retry_base_ms * 2 ** Math.max(0, attempt - 1), config.retry_max_ms);
}

/** The {@link AlertSink} of a running gateway: see the file's comment. */
export class AlertDispatcher implements AlertSink {
  readonly stats: AlertStats = { recorded: 0, duplicates: 0, delivered: 0, retried: 0, failed: 0 };
  private readonly spends = new Map<string, SpendNote>();
  private readonly events: QueuedEvent[] = [];
  private readonly seen = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly sending = new Set<Promise<void>>();
  private drainTimer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private recordsTimer: NodeJS.Timeout | undefined;
  private recordsState: 'writable' | 'unwritable' = 'writable';
  private recordsChanges = 0;
  private apiWebhooks: AlertWebhook[] = [];
  private readonly outcomes = new Map<string, ModelOutcomes>();
  private closed = false;
  private readonly instance = `${hostname()}:${process.pid}:${Date.now().toString(36)}`;
  private readonly now: () => number;

  constructor(private readonly deps: AlertDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Start the sweep (deliveries due, also those a stopped process left) and the records check. */
  start(): void {
    void this.refreshWebhooks().then(() => this.sweep());
    this.sweepTimer = setInterval(() => void this.sweep(), this.deps.config().sweep_interval_ms);
    this.sweepTimer.unref();
    this.recordsTimer = setInterval(() => {
      this.checkRecords();
      this.checkErrorRates();
    }, RECORDS_CHECK_MS);
    this.recordsTimer.unref();
  }

  /** Whether any webhook is configured or made through the API (nothing is watched without one). */
  private get active(): boolean {
    return this.deps.config().webhooks.length > 0 || this.apiWebhooks.length > 0;
  }

  /** Read the API-made webhooks again (after a change through the API, and at each sweep). */
  async refreshWebhooks(): Promise<void> {
    try {
      this.apiWebhooks = await listAlertWebhooks(this.deps.db);
    } catch (err) {
      this.deps.log.warn({ err: (err as Error).message }, 'alerts: could not read the alert webhooks');
    }
  }

  noteSpend(credit: SpendNote): void {
    if (this.closed || credit.level === 'end_user' || !this.active) return;
    this.spends.set(`${credit.level}:${credit.id}`, credit);
    this.scheduleDrain();
  }

  breaker(endpoint: string, state: 'open' | 'closed'): void {
    if (this.closed || !this.active) return;
    this.events.push({ type: state === 'open' ? 'breaker.opened' : 'breaker.closed', data: { endpoint, state }, createdAt: this.now(), subject: { name: `breaker:${endpoint}`, state } });
    this.scheduleDrain();
  }

  noteOutcome(model: string, failed: boolean): void {
    const rate = this.deps.config().error_rate;
    if (this.closed || !rate || !this.active) return;
    const size = Math.ceil(rate.window_ms / RATE_BUCKETS);
    const start = Math.floor(this.now() / size) * size;
    let m = this.outcomes.get(model);
    if (!m) this.outcomes.set(model, (m = { buckets: [], high: false }));
    let last = m.buckets[m.buckets.length - 1];
    if (!last || last[0] !== start) {
      m.buckets.push((last = [start, 0, 0]));
      if (m.buckets.length > RATE_BUCKETS + 1) m.buckets.shift();
    }
    last[1]++;
    if (failed) last[2]++;
  }

  /** Each model's error rate over its window against the threshold: a change of verdict is an event (fleet-wide by compare-and-set). */
  private checkErrorRates(): void {
    const rate = this.deps.config().error_rate;
    if (!rate) return;
    const since = this.now() - rate.window_ms;
    for (const [model, m] of this.outcomes) {
      let requests = 0;
      let errors = 0;
      for (const [at, n, f] of m.buckets) {
        if (at + Math.ceil(rate.window_ms / RATE_BUCKETS) <= since) continue;
        requests += n;
        errors += f;
      }
      if (requests === 0 && !m.high) {
        this.outcomes.delete(model);
        continue;
      }
      const high = requests >= rate.min_requests && errors / requests >= rate.threshold;
      if (high === m.high || (!high && requests < rate.min_requests && requests > 0 && errors / requests >= rate.threshold)) continue;
      m.high = high;
      const state = high ? 'high' : 'normal';
      this.events.push({ type: `error_rate.${state}`, data: { model, requests, errors, rate: requests ? errors / requests : 0, threshold: rate.threshold, window_ms: rate.window_ms }, createdAt: this.now(), subject: { name: `error_rate:${model}`, state } });
      this.scheduleDrain();
    }
  }

  /** The record writer's state changed since the last check: an event (per process: each has its own writer). */
  private checkRecords(): void {
    const problem = this.deps.recordsProblem();
    const state = problem === null ? 'writable' : 'unwritable';
    if (state === this.recordsState) return;
    this.recordsState = state;
    if (!this.active) return;
    this.recordsChanges++;
    this.events.push({ type: `records.${state}`, data: { instance: this.instance, problem }, createdAt: this.now(), dedupeKey: `records:${this.instance}:${this.recordsChanges}` });
    this.scheduleDrain();
  }

  private scheduleDrain(): void {
    if (this.drainTimer || this.closed) return;
    this.drainTimer = setTimeout(() => {
      this.drainTimer = undefined;
      void this.drain();
    }, DRAIN_DELAY_MS);
    this.drainTimer.unref();
  }

  /** Turn what was queued into events (one drain at a time); resolves when the queue is empty. */
  async drain(): Promise<void> {
    while (this.draining) await this.draining;
    if (this.spends.size === 0 && this.events.length === 0) return;
    this.draining = this.drainOnce().finally(() => (this.draining = undefined));
    await this.draining;
  }

  private async drainOnce(): Promise<void> {
    const spends = [...this.spends.values()];
    this.spends.clear();
    for (const credit of spends) await this.checkBudget(credit).catch((err: unknown) => this.deps.log.warn({ err: (err as Error).message, id: credit.id }, 'alerts: could not check a budget'));
    const events = this.events.splice(0);
    for (const e of events) await this.record(e);
  }

  private async checkBudget(credit: SpendNote): Promise<void> {
    if (credit.limitPico <= 0n) return;
    const fractions = [...new Set(this.deps.config().budget_fractions)].sort((a, b) => a - b);
    const keyOf = (f: number) => `budget:${credit.level}:${credit.id}:${credit.periodStart}:${f}`;
    if (fractions.every((f) => this.seen.has(keyOf(f)))) return;
    const spent = await this.deps.spent(credit);
    for (const f of fractions) {
      const threshold = (credit.limitPico * BigInt(Math.round(f * 1e6))) / 1_000_000n;
      if (spent < threshold || this.seen.has(keyOf(f))) continue;
      this.remember(keyOf(f));
      const named = credit.level === 'key' ? await getKey(this.deps.db, credit.id) : await getTeam(this.deps.db, credit.id);
      const data = { level: credit.level, id: credit.id, name: named?.name ?? null, fraction: f, limit: picoToUsdString(credit.limitPico), spent: picoToUsdString(spent), limit_reset: named?.settings.limit_reset ?? null, period_start: new Date(credit.periodStart).toISOString() };
      this.events.push({ type: 'budget.threshold', data, createdAt: this.now(), dedupeKey: keyOf(f) });
    }
  }

  private remember(key: string): void {
    if (this.seen.size >= SEEN_MAX) this.seen.delete(this.seen.values().next().value as string);
    this.seen.add(key);
  }

  /** The webhooks an event of `type` goes to: configured and API-made, filtered by their `events`. */
  private webhooksFor(type: string): { id: string; url: string }[] {
    const all = [...this.deps.config().webhooks.map((w) => ({ id: w.id, url: w.url, events: w.events as readonly string[] })), ...this.apiWebhooks];
    return all.filter((w) => w.events.length === 0 || w.events.includes(type)).map((w) => ({ id: w.id, url: w.url }));
  }

  /** A webhook by id as it is now (config first, then API-made). */
  private webhook(id: string): { url: string; format: 'json' | 'slack'; secret_env: string | null } | undefined {
    const c = this.deps.config().webhooks.find((w) => w.id === id);
    if (c) return { url: c.url, format: c.format, secret_env: c.secret_env ?? null };
    return this.apiWebhooks.find((w) => w.id === id);
  }

  private async record(e: QueuedEvent): Promise<void> {
    try {
      let dedupeKey = e.dedupeKey;
      if (e.subject) {
        const version = await transitionAlertState(this.deps.db, e.subject.name, e.subject.state, e.createdAt);
        if (version === undefined) {
          this.stats.duplicates++;
          return;
        }
        dedupeKey = `${e.subject.name}:${version}`;
        // A subject seen for the first time in its quiet state (a breaker closing that never opened fleet-wide) is no news.
        if (version === 1 && (e.subject.state === 'closed' || e.subject.state === 'normal')) return;
      }
      const recorded = await recordAlertEvent(this.deps.db, { type: e.type, dedupeKey: dedupeKey!, data: e.data, createdAt: e.createdAt }, this.webhooksFor(e.type));
      if (!recorded) {
        this.stats.duplicates++;
        return;
      }
      this.stats.recorded++;
      for (const id of recorded.deliveries) this.deliver(id);
    } catch (err) {
      if (e.type.startsWith('records.')) {
        // Records that cannot be written often mean a database that cannot be: this process's own event is sent from memory.
        this.deps.log.warn({ err: (err as Error).message, type: e.type }, 'alerts: the event could not be recorded; it is sent from memory, without a delivery log');
        this.sendDirect(e);
      } else this.deps.log.error({ err: (err as Error).message, type: e.type }, 'alerts: an event could not be recorded; it is not sent');
    }
  }

  /** Send an event no table holds (the database failing): each webhook's attempts and retries in memory only. */
  private sendDirect(e: QueuedEvent): void {
    const event = { id: `evt_local_${randomId(12)}`, type: e.type, created_at: e.createdAt, data: e.data };
    for (const w of this.webhooksFor(e.type)) {
      const d: ClaimedDelivery = { id: `dlv_local_${randomId(12)}`, webhookId: w.id, url: w.url, attempt: 0, event };
      const attempt = (): void => {
        if (this.closed) return;
        d.attempt++;
        const config = this.deps.config();
        const p = this.send(d, config)
          .then((r) => {
            if (r.ok) this.stats.delivered++;
            else if (d.attempt >= config.max_attempts) {
              this.stats.failed++;
              this.deps.log.warn({ delivery: d.id, webhook: w.id, status: r.status, error: r.error }, 'alerts: a delivery failed after its last attempt');
            } else {
              this.stats.retried++;
              this.later(retryDelayMs(config, d.attempt), attempt);
            }
          })
          .finally(() => this.sending.delete(p));
        this.sending.add(p);
      };
      attempt();
    }
  }

  /** Claim a delivery and send it (in the background; {@link idle} waits for it). */
  deliver(id: string): void {
    if (this.closed) return;
    const p = this.attempt(id)
      .catch((err: unknown) => this.deps.log.error({ err: (err as Error).message, delivery: id }, 'alerts: a delivery attempt failed to run'))
      .finally(() => this.sending.delete(p));
    this.sending.add(p);
  }

  private async attempt(id: string): Promise<void> {
    const config = this.deps.config();
    const claimed = await claimDelivery(this.deps.db, id, this.now(), config.timeout_ms + 5_000);
    if (!claimed) return;
    const result = await this.send(claimed, config);
    const now = this.now();
    if (result.ok) {
      this.stats.delivered++;
      await finishAttempt(this.deps.db, id, { state: 'delivered', status: result.status, error: null, now });
      return;
    }
    if (claimed.attempt >= config.max_attempts) {
      this.stats.failed++;
      this.deps.log.warn({ delivery: id, webhook: claimed.webhookId, status: result.status, error: result.error, attempts: claimed.attempt }, 'alerts: a delivery failed after its last attempt');
      await finishAttempt(this.deps.db, id, { state: 'failed', status: result.status, error: result.error, now });
      return;
    }
    this.stats.retried++;
    const delay = retryDelayMs(config, claimed.attempt);
    await finishAttempt(this.deps.db, id, { state: 'pending', status: result.status, error: result.error, nextAttemptAt: now + delay, now });
    this.later(delay, () => this.deliver(id));
  }

  private later(ms: number, fn: () => void): void {
    if (this.closed) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    t.unref();
    this.timers.add(t);
  }

  /** POST the event to its webhook. A 2xx answer delivers it; anything else (or none within `timeout_ms`) is a failed attempt. */
  private async send(d: ClaimedDelivery, config: AlertsConfig): Promise<{ ok: boolean; status: number | null; error: string | null }> {
    const hook = this.webhook(d.webhookId);
    if (!hook) return { ok: false, status: null, error: `webhook ${d.webhookId} no longer exists` };
    const event = { id: d.event.id, type: d.event.type, created_at: new Date(d.event.created_at).toISOString(), data: d.event.data };
    const body = JSON.stringify(hook.format === 'slack' ? slackMessage(event) : event);
    const timestamp = Math.floor(this.now() / 1000);
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'opinference-alerts', 'x-op-event': d.event.type, 'x-op-delivery': d.id, 'x-op-timestamp': String(timestamp) };
    if (hook.secret_env !== null) {
      const secret = process.env[hook.secret_env];
      if (!secret) return { ok: false, status: null, error: `the signing secret's environment variable ${hook.secret_env} is empty` };
      headers['x-op-signature'] = signAlert(secret, timestamp, body);
    }
    try {
      const res = await fetch(hook.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(config.timeout_ms), redirect: 'manual' });
      await res.arrayBuffer().catch(() => undefined);
      return res.ok ? { ok: true, status: res.status, error: null } : { ok: false, status: res.status, error: `the receiver answered ${res.status}` };
    } catch (err) {
      const e = err as { name?: string; message?: string; cause?: { code?: string } };
      return { ok: false, status: null, error: e.name === 'TimeoutError' ? `no answer within ${config.timeout_ms} ms` : `${e.cause?.code ?? e.name ?? 'Error'}: ${e.message ?? String(err)}` };
    }
  }

  /** Send what is due (retries, and deliveries a stopped process left behind). */
  private async sweep(): Promise<void> {
    if (this.closed) return;
    try {
      await this.refreshWebhooks();
      if (!this.active) return; // no webhook: nothing to send (one query per sweep)
      for (const id of await dueDeliveries(this.deps.db, this.now())) this.deliver(id);
    } catch (err) {
      this.deps.log.warn({ err: (err as Error).message }, 'alerts: could not look for deliveries due');
    }
  }

  /** Resolves once the queue is drained and no attempt is in flight (tests; shutdown). */
  async idle(): Promise<void> {
    await this.drain();
    while (this.sending.size > 0) await Promise.all([...this.sending]);
  }

  /** Stop timers; attempts in flight finish (their rows stay pending for a later sweep if they do not). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.drainTimer) clearTimeout(this.drainTimer);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    if (this.recordsTimer) clearInterval(this.recordsTimer);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await Promise.all([...this.sending]);
  }
}
