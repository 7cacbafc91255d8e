import type { Kysely } from 'kysely';
import type { BatchesConfig } from '../../config/batches-schema.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { ingressForPath } from '../../ingress/registry.js';
import { claimLines, finishLines, moveBatch, openBatches, hasOpenLines, closeQueuedLines, requeueLine, releaseLines, type ClaimedLine, type LineResult } from '../../store/batch-store.js';
import { getKey, type ApiKey } from '../../store/keys.js';
import { keySettingsSchema } from '../../store/key-settings.js';
import type { Database, GenerationsTable } from '../../store/schema.js';
import { newRequestId, randomId } from '../../util/ids.js';
import { serveGeneration } from '../stages/serve-generation.js';
import type { GatewayRuntime } from '../state/runtime.js';
import { CapturedAnswer } from '../state/captured-answer.js';
import { finalizeBatch } from './batch-finalize.js';

/** Refusals a batch line waits out and runs again (the key's or the upstream's rate limit, a full gateway), rather than answering. */
const RETRIED = new Set(['rate_limited', 'upstream_rate_limited', 'endpoints_unavailable', 'gateway_overloaded', 'records_unavailable', 'database_unavailable', 'limits_unavailable', 'gateway_shutting_down']);
/** Most finished lines written per transaction; a partial group is written after {@link WRITE_DELAY_MS}. */
const WRITE_GROUP = 100;
const WRITE_DELAY_MS = 20;
/** How long a key looked up for a line is reused, in ms (as the auth cache: store/… KEY_CACHE_TTL_MS). */
const KEY_TTL_MS = 5_000;

/** How long after the last interactive request seen the pool stays at `busy_concurrency`, in ms. */
const BUSY_WINDOW_MS = 250;

/** The admin key, for batches it created (its records carry no key id, as its requests do). */
const ADMIN: ApiKey = { id: 'admin', name: 'admin', prefix: 'admin', disabled: false, createdAt: 0, expiresAt: null, isAdmin: true, settings: keySettingsSchema.parse({}), team: null };

/**
 * The batch worker pool of one gateway process (docs/batches.md). Every `poll_interval_ms` (and
 * whenever a line ends while more wait) it moves open batches along (validating → in_progress;
 * no line left → finalizing → completed; cancelling → cancelled; past `expires_at` → expired)
 * and claims due lines with a lease (store/batch-store.ts `claimLines`: `FOR UPDATE SKIP LOCKED`
 * on PostgreSQL), at most `concurrency` in flight, `per_key` per key and `per_model` per model,
 * and none while `yield_in_flight` interactive requests are in flight (batch traffic yields).
 * Each line runs through {@link serveGeneration} as a request of the batch's key (its
 * routing, fallbacks, limits, cost and retention); a line refused by a rate limit is queued
 * again after its Retry-After (at most `max_retries` times) and its refusal not recorded; any
 * other answer is the line's result, written with the line's one generation record in one
 * transaction (`finishLines`), so a line whose worker dies is run again by another (its lease
 * runs out) and is never answered or recorded twice.
 */
export class BatchRunner {
  /** This worker's lease owner id. */
  readonly owner = `w_${randomId(16)}`;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private closed = false;
  /** Lines running now, and per key and model. */
  private running = 0;
  private readonly perKey = new Map<string, number>();
  private readonly perModel = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  /** Lines claimed (leased) and not started yet: claims are taken in groups, run as slots free. */
  private buffer: ClaimedLine[] = [];
  /** performance.now() of the last move of open batches. */
  private advancedAt = -Infinity;
  /** performance.now() when interactive requests were last seen in flight. */
  private busyAt = -Infinity;
  /**
   * Interactive generation requests in flight (the server's count of its generation routes:
   * server/overload.ts); until the server sets it, the runtime's count less this pool's lines.
   */
  interactiveInFlight: () => number = () => Math.max(0, this.rt().inFlight - this.running);
  private pending: LineResult[] = [];
  private writeTimer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private readonly keys = new Map<string, { key: ApiKey | undefined; at: number }>();
  /** Lines finished since start (written). */
  finished = 0;
  /** Lines queued again after a rate-limit refusal, since start. */
  retried = 0;
  /** Tests: drop every result instead of writing it (a process killed mid-batch). */
  crashed = false;

  constructor(private readonly rt: () => GatewayRuntime, private readonly db: Kysely<Database>) {}

  private get config(): BatchesConfig {
    return this.rt().config.batches;
  }

  /** Start polling (a no-op with `batches.enabled: false`). */
  start(): void {
    if (!this.config.enabled || this.timer || this.closed) return;
    this.timer = setInterval(() => this.kick(true), this.config.poll_interval_ms);
    this.timer.unref();
    this.kick();
  }

  /** Look for work now (unless a look is under way); `advance`: move open batches along too (at most once per poll interval). */
  kick(advance = false): void {
    if (this.closed || this.ticking) return;
    this.ticking = this.tick(advance)
      .catch((err: unknown) => this.rt().log.warn({ err }, 'batch worker: could not claim lines'))
      .finally(() => (this.ticking = undefined));
  }

  private async tick(advance: boolean): Promise<void> {
    const now = Date.now();
    const cfg = this.config;
    if (advance || performance.now() - this.advancedAt >= cfg.poll_interval_ms) {
      this.advancedAt = performance.now();
      await this.advance(now);
    }
    this.startBuffered();
    // Claim in groups of up to twice `concurrency` (busy or not: fewer claims), once the buffer
    // cannot fill the pool's free slots.
    if (this.buffer.length > Math.max(this.poolSize() - this.running, cfg.concurrency / 2)) return;
    const room = cfg.concurrency * 2 - this.running - this.buffer.length;
    // Interactive requests first.
    if (room <= 0 || this.interactiveInFlight() >= cfg.yield_in_flight) return;
    const keyLoad = new Map(this.perKey);
    const modelLoad = new Map(this.perModel);
    for (const l of this.buffer) {
      keyLoad.set(l.key_id ?? '', (keyLoad.get(l.key_id ?? '') ?? 0) + 1);
      modelLoad.set(l.model, (modelLoad.get(l.model) ?? 0) + 1);
    }
    // A key or model may hold twice its bound: as many running and as many waiting in the buffer.
    const accept = (line: ClaimedLine) => {
      const k = line.key_id ?? '';
      if ((keyLoad.get(k) ?? 0) >= cfg.per_key * 2 || (modelLoad.get(line.model) ?? 0) >= cfg.per_model * 2) return false;
      keyLoad.set(k, (keyLoad.get(k) ?? 0) + 1);
      modelLoad.set(line.model, (modelLoad.get(line.model) ?? 0) + 1);
      return true;
    };
    const lines = await claimLines(this.db, this.owner, now, cfg.lease_ms, room, accept);
    this.buffer.push(...lines);
    this.startBuffered();
  }

  /**
   * The lines this pool may run now: `concurrency`, or `busy_concurrency` while interactive
   * requests are in flight or were within the last {@link BUSY_WINDOW_MS} (batch traffic yields).
   */
  private poolSize(): number {
    const cfg = this.config;
    const now = performance.now();
    if (this.interactiveInFlight() > 0) this.busyAt = now;
    return now - this.busyAt < BUSY_WINDOW_MS ? Math.min(cfg.busy_concurrency, cfg.concurrency) : cfg.concurrency;
  }

  /** Start buffered lines while the pool, their key and their model have room. */
  private startBuffered(): void {
    const cfg = this.config;
    const pool = this.poolSize();
    if (this.buffer.length === 0 || this.running >= pool) return;
    const rest: ClaimedLine[] = [];
    for (const line of this.buffer) {
      if (this.running < pool && !this.closed && (this.perKey.get(line.key_id ?? '') ?? 0) < cfg.per_key && (this.perModel.get(line.model) ?? 0) < cfg.per_model) this.launch(line);
      else rest.push(line);
    }
    this.buffer = rest;
  }

  /** Move every open batch along its statuses; one replica wins each move (conditional updates). */
  private async advance(now: number): Promise<void> {
    for (const b of await openBatches(this.db)) {
      if (b.status === 'validating') {
        await moveBatch(this.db, b.id, ['validating'], { status: 'in_progress', in_progress_at: now });
      } else if (b.status === 'in_progress' && now >= Number(b.expires_at)) {
        await this.dropBuffered(b.id);
        await closeQueuedLines(this.db, b.id, 'expired', now);
        if (!(await hasOpenLines(this.db, b.id, ['running']))) await finalizeBatch(this.db, b, 'expired', now, this.config.result_retention_days);
      } else if (b.status === 'in_progress' && !(await hasOpenLines(this.db, b.id))) {
        if (await moveBatch(this.db, b.id, ['in_progress'], { status: 'finalizing', finalizing_at: now })) await finalizeBatch(this.db, { ...b, finalizing_at: now }, 'completed', now, this.config.result_retention_days);
      } else if (b.status === 'finalizing') {
        await finalizeBatch(this.db, b, 'completed', now, this.config.result_retention_days);
      } else if (b.status === 'cancelling') {
        await this.dropBuffered(b.id);
        await closeQueuedLines(this.db, b.id, 'canceled', now);
        if (!(await hasOpenLines(this.db, b.id, ['running']))) await finalizeBatch(this.db, b, 'cancelled', now, this.config.result_retention_days);
      }
    }
  }

  /** Give back the claimed lines of a batch that will run no more (cancelled, expired) that have not started. */
  private async dropBuffered(batchId: string): Promise<void> {
    const dropped = this.buffer.filter((l) => l.batch_id === batchId);
    if (dropped.length === 0) return;
    this.buffer = this.buffer.filter((l) => l.batch_id !== batchId);
    await releaseLines(this.db, this.owner, { batchId, lineNos: dropped.map((l) => l.line_no) });
  }

  private launch(line: ClaimedLine): void {
    const k = line.key_id ?? '';
    this.running++;
    this.perKey.set(k, (this.perKey.get(k) ?? 0) + 1);
    this.perModel.set(line.model, (this.perModel.get(line.model) ?? 0) + 1);
    const run: Promise<void> = this.runLine(line)
      .catch((err: unknown) => this.rt().log.error({ err, batch: line.batch_id, line: line.line_no }, 'batch worker: line failed'))
      .finally(() => {
        this.running--;
        this.perKey.set(k, this.perKey.get(k)! - 1);
        this.perModel.set(line.model, this.perModel.get(line.model)! - 1);
        this.inFlight.delete(run);
        this.startBuffered();
        this.kick();
      });
    this.inFlight.add(run);
  }

  private async keyOf(id: string | null): Promise<ApiKey | undefined> {
    if (id === null) return ADMIN;
    const now = Date.now();
    const hit = this.keys.get(id);
    if (hit && now - hit.at < KEY_TTL_MS) return hit.key;
    const key = await getKey(this.db, id);
    this.keys.set(id, { key, at: now });
    return key;
  }

  /** Run one line through the pipeline and queue its result (or queue the line again after a rate-limit refusal). */
  private async runLine(line: ClaimedLine): Promise<void> {
    const rt = this.rt();
    const path = line.api === 'anthropic' ? '/v1/messages' : line.endpoint;
    const ingress = ingressForPath(path);
    const requestId = newRequestId();
    const key = await this.keyOf(line.key_id);
    if (!ingress || !key || key.disabled || (key.expiresAt !== null && key.expiresAt <= Date.now())) {
      const err = new GatewayError(ingress ? 'invalid_api_key' : 'not_found', ingress ? 'the key that created this batch is disabled, expired or deleted' : `no client API serves ${path}`);
      const body = ingress ? ingress.errorBody(err, requestId) : { error: err.toBody(requestId) };
      return this.queueResult({ batchId: line.batch_id, lineNo: line.line_no, statusCode: err.status, result: JSON.stringify(body), generationId: null, requestId, row: undefined });
    }
    const answer = new CapturedAnswer('a batch line');
    let row: GenerationsTable | undefined;
    const capture = (r: GenerationsTable) => {
      row = r;
    };
    await serveGeneration(rt, ingress, JSON.parse(line.body) as unknown, key, requestId, answer, undefined, undefined, undefined, { batchId: line.batch_id, customId: line.custom_id, capture });
    // A refusal before any record (the record queue full) answers 503 without a row.
    const code = row?.error_code ?? (answer.status === 503 ? 'records_unavailable' : null);
    if (answer.status !== 200 && code !== null && RETRIED.has(code) && line.tries < this.config.max_retries && !this.closed) {
      const after = Number(answer.headers['retry-after']);
      const waitMs = Number.isFinite(after) && after > 0 ? after * 1000 : this.config.retry_delay_ms;
      this.retried++;
      if (!this.crashed) await requeueLine(this.db, this.owner, line.batch_id, line.line_no, Date.now() + waitMs);
      return;
    }
    this.queueResult({ batchId: line.batch_id, lineNo: line.line_no, statusCode: answer.status, result: JSON.stringify(answer.body ?? null), generationId: row?.id ?? null, requestId, row });
  }

  private queueResult(result: LineResult): void {
    if (this.crashed) return;
    this.pending.push(result);
    if (this.pending.length >= WRITE_GROUP) this.write();
    else if (!this.writeTimer) this.writeTimer = setTimeout(() => this.write(), WRITE_DELAY_MS);
  }

  /** Write the finished lines waiting, one transaction (after the write in progress). */
  private write(): Promise<void> {
    clearTimeout(this.writeTimer);
    this.writeTimer = undefined;
    const group = this.pending;
    this.pending = [];
    if (group.length === 0) return this.writing;
    this.writing = this.writing.then(() => this.writeGroup(group));
    return this.writing;
  }

  private async writeGroup(group: LineResult[]): Promise<void> {
    const rt = this.rt();
    for (let delay = 100; ; delay = Math.min(delay * 2, 5_000)) {
      try {
        const rows = await finishLines(this.db, this.owner, group);
        this.finished += group.length;
        rt.writer.onWritten?.(rows);
        return;
      } catch (err) {
        // The lines stay leased to this worker: written on a later try, or run again elsewhere once the lease runs out.
        rt.log.error({ err, lines: group.length }, 'batch worker: could not write finished lines; retrying');
        if (this.closed && delay >= 5_000) return;
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /**
   * Stop: claim nothing more, let the lines in flight end (their results written), and give back
   * any line still held. With `crashed` set (tests), nothing more is written: the leases stay, as
   * after a killed process.
   */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.ticking;
    await Promise.allSettled([...this.inFlight]);
    if (this.crashed) return;
    await this.write();
    await releaseLines(this.db, this.owner).catch(() => {});
  }
}
