import type { Kysely } from 'kysely';
import type { Database, GenerationsTable } from './schema.js';
import { applyRollups } from './usage-rollup.js';
import { sqlDialectOf } from './sql-dialect.js';
import { USAGE_CLAMPED } from '../accounting/usage-bounds.js';
import { boundRow, degradedRow, isEnvironmentError, describeWriteError } from './record-guard.js';
import { DatabaseFileWatch } from './database-file-watch.js';
import { LOOP_SLICE_MS, loopPace } from './loop-pace.js';

/** Minimal logger shape (pino-compatible). */
export interface WriterLogger {
  error(obj: object, msg: string): void;
  warn?(obj: object, msg: string): void;
}

/** What the writer reports to metrics. */
export interface WriterHooks {
  /** A write of a batch (or a row) failed and will be retried; `code` is the error's code (`SQLITE_FULL`). */
  writeFailed?(code: string): void;
  /** Records given up on: `reason` is `invalid_record`, `queue_full` or `shutdown`. */
  dropped?(count: number, reason: string): void;
  /** A record whose usage or cost was out of bounds was written clamped. */
  clamped?(): void;
  /**
   * A batch was committed: `writeMs` is how long its transaction took (start to commit), `lagMs`
   * how long its oldest record waited from being queued (its response sent) to the commit — the
   * window a SIGKILL at that moment would have lost; both in ms.
   */
  committed?(writeMs: number, lagMs: number): void;
}

/** How the writer flushes (`records.*` of the config). */
export interface WriterSettings {
  /**
   * The window within which each record is committed after it is queued, in ms, while one
   * batch write takes at most half of it (else: two write durations).
   */
  flush_interval_ms: number;
  /** `strict`: {@link GenerationWriter.add} returns a promise settled once the record's write was tried. */
  durability: 'batched' | 'strict';
  /** Most records held in memory while writes fail. */
  max_queued: number;
}

/** First retry delay after a failed write, in ms; doubles per failure up to {@link RETRY_MAX_MS}. */
export const RETRY_MIN_MS = 100;
/** Longest delay between two retries of a failing write, in ms. */
export const RETRY_MAX_MS = 5_000;
/** How long {@link GenerationWriter.close} keeps retrying a failing database before dropping what is left, in ms. */
export const CLOSE_RETRY_MS = 5_000;
/**
 * Per batch, how much of the slowest recent write duration and flush-timer delay the writer
 * keeps planning with (a decaying maximum: a slow write moves the start of the next batches
 * earlier, by half as much after 34 batches, about 3 s at the default interval under load).
 */
const RECENT_DECAY = 0.98;

/**
 * Most rows one transaction of the writer holds on SQLite (its inserts and rollups): a larger
 * batch (a backlog after an outage, or a writer behind its queue) is written as several
 * transactions, one turn of the event loop apart. What keeps the loop free is not this but
 * {@link loopPace}: within a transaction the writer yields every {@link LOOP_SLICE_MS} ms. This
 * bounds how long other queries of the process wait for SQLite's one connection while a
 * transaction is open; it is the writer's usual batch (500), because smaller transactions cost
 * CPU per row (measured: 200-row transactions +40 % CPU per row against one transaction per
 * 500-row batch, each commit writing the same dirty index and rollup pages to the WAL again).
 */
export const WRITE_SLICE_ROWS = 500;

/** Let the event loop run its I/O and timers before the next slice (a macrotask turn; promises alone would not). */
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

type Waiter = () => void;

/**
 * Writes generation records off the response path: rows are queued and inserted in batches
 * (one transaction per batch, with their rollups), or at once when `batchSize` rows wait. A
 * batch starts once its oldest row has waited half of `flush_interval_ms`, or earlier by as much
 * as recent writes and flush timers took beyond that budget (a decaying maximum of each), so
 * that the oldest row is committed within the interval as long as one write takes at most half
 * of it; slower writes run back to back (a row waits at most for the write in progress and its
 * own). The batch starts in the turn that finds it due: under load the check at each queued row
 * starts it, so it does not wait behind the event loop's queue for a timer. Rows still queued
 * are visible through {@link GenerationWriter.pending} so a lookup right after a response
 * finds them.
 *
 * Nothing is lost silently: implausible usage or cost is clamped and flagged (`usage_clamped`);
 * a batch refused because of one bad row is retried row by row and the bad row written in a
 * reduced form (no usage, cost 0, `record_error` in its detail) or, if even that fails, dropped
 * and counted. A database that cannot be written (disk full, read-only, deleted file) makes
 * {@link problem} non-null (`/ready` answers 503), is logged with its real error, and the batch
 * is retried with backoff ({@link RETRY_MIN_MS}…{@link RETRY_MAX_MS}); records beyond
 * `max_queued` are dropped, oldest first, and counted.
 */
export class GenerationWriter {
  private queue: GenerationsTable[] = [];
  private readonly byId = new Map<string, GenerationsTable>();
  private readonly waiters = new Map<string, Waiter>();
  private timer: NodeJS.Timeout | undefined;
  /** The pending timer is the zero-delay one (a batch is due now). */
  private timerImmediate = false;
  /** performance.now() when the oldest queued row was queued. */
  private oldestAt = 0;
  /** performance.now() at which the pending flush timer (not the zero-delay one) is due. */
  private timerDueAt = 0;
  /** Decaying maximum of batch write durations (transaction start to commit), in ms. */
  private recentWriteMs = 0;
  /** Decaying maximum of how late the flush timer fired, in ms (a busy event loop delays it). */
  private recentLateMs = 0;
  private running: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelay = RETRY_MIN_MS;
  private failure: string | null = null;
  private fileWatch: DatabaseFileWatch | undefined;
  private closing = false;
  private settings: WriterSettings;
  /** Rows written since start. */
  written = 0;
  /** Rows given up on since start. */
  dropped = 0;
  /** Called after each batch is committed (e.g. to settle spend caches). */
  onWritten: ((rows: readonly GenerationsTable[]) => void) | undefined;
  hooks: WriterHooks = {};
  /**
   * Most rows per transaction: on SQLite {@link WRITE_SLICE_ROWS}, on PostgreSQL the whole batch
   * (its connection is one of a pool, so an open transaction keeps no other query waiting, and
   * each transaction costs round trips and the rollup lock); benches and tests change it.
   */
  sliceRows: number;
  /** Longest stretch a transaction holds the event loop before it yields, in ms ({@link LOOP_SLICE_MS}). */
  sliceMs = LOOP_SLICE_MS;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly log: WriterLogger,
    intervalMs = 200,
    private readonly batchSize = 500,
  ) {
    this.settings = { flush_interval_ms: intervalMs, durability: 'batched', max_queued: Math.max(100_000, batchSize) };
    this.sliceRows = sqlDialectOf(db).name === 'sqlite' ? WRITE_SLICE_ROWS : Number.POSITIVE_INFINITY;
  }

  /** Apply `records.*` settings (at start and on config reload). */
  configure(settings: Partial<WriterSettings>): void {
    this.settings = { ...this.settings, ...settings };
  }

  /** True when `records.durability` is `strict`. */
  get strict(): boolean {
    return this.settings.durability === 'strict';
  }

  /** Rows waiting to be written. */
  get queued(): number {
    return this.queue.length;
  }

  /**
   * Why records cannot be written now (the last write error, or the database file gone), or
   * null when they can. `/ready` answers 503 while this is set.
   */
  get problem(): string | null {
    return this.failure ?? this.fileWatch?.check() ?? null;
  }

  /**
   * Check the SQLite file at `path` for deletion or replacement every `intervalMs` and before
   * each write; a change is logged once as an error and reported by {@link problem}.
   */
  watchFile(path: string, intervalMs = 2_000): void {
    this.fileWatch?.stop();
    this.fileWatch = new DatabaseFileWatch(path, intervalMs, (message) => this.log.error({ path }, message));
  }

  /**
   * Queue one record. In `strict` durability returns a promise settled once the record is
   * committed (or its write failed and it waits for a retry); else returns nothing.
   * Never throws, never rejects.
   */
  add(row: GenerationsTable): Promise<void> | void {
    // While the database fails, a strict response does not wait for the next retry (/ready is 503).
    if (!this.strict || this.failure !== null) return this.enqueue(row);
    const written = new Promise<void>((resolve) => this.waiters.set(row.id, resolve));
    this.enqueue(row);
    return written;
  }

  /** Queue one record (batched: the write happens within `flush_interval_ms`). */
  enqueue(row: GenerationsTable): void {
    const now = performance.now();
    if (this.queue.length === 0) this.oldestAt = now;
    this.queue.push(row);
    this.byId.set(row.id, row);
    if (this.queue.length > this.settings.max_queued) this.shed();
    this.plan(now);
  }

  /** Start the queued rows' batch now if it is due (or full), else make sure a timer will. */
  private plan(now: number): void {
    if (this.retryTimer || this.queue.length === 0) return; // a failing database: the retry timer drives the writes
    if (this.strict) {
      this.schedule(0);
      return;
    }
    const wait = this.startAge() - (now - this.oldestAt);
    // Due (or full): start it in this turn. A zero-delay timer would wait behind every I/O
    // callback the loop has queued (measured: up to 280 ms at 50 concurrent clients).
    if (wait <= 0 || this.queue.length >= this.batchSize) void this.flush();
    else if (!this.timer) this.schedule(wait);
  }

  /**
   * Age of the oldest queued row at which its batch starts, in ms: half of `flush_interval_ms`
   * (the other half is for the write and event-loop delays), or less when twice the recent
   * write duration plus flush-timer delay (twice: a spike beyond the recent maximum, a process
   * short of CPU) would not fit in the rest of the interval; 0 (write as soon as the previous
   * write ends) when it takes all of it.
   */
  private startAge(): number {
    const interval = this.settings.flush_interval_ms;
    return Math.max(0, Math.min(interval / 2, interval - 2 * (this.recentWriteMs + this.recentLateMs)));
  }

  /**
   * Whether a new generation must be refused (`records_unavailable`) because its record could
   * not be kept: the records waiting plus `inFlight` generations still running (each will add
   * one) reach `records.max_queued`. Refusing then, rather than dropping the oldest record, keeps
   * the record of every answer already given.
   */
  full(inFlight: number): boolean {
    return this.queue.length + inFlight >= this.settings.max_queued;
  }

  /** Seconds until the next write attempt while writes fail (1 when none is scheduled): `Retry-After` of `records_unavailable`. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.retryDelay / 1000));
  }

  /** Count a record given up on before it was queued (the request refused because the queue is {@link full}). */
  discard(reason: 'queue_full'): void {
    this.dropped += 1;
    this.hooks.dropped?.(1, reason);
  }

  /** A queued (not yet written) record by id. */
  pending(id: string): GenerationsTable | undefined {
    return this.byId.get(id);
  }

  /** Write everything queued now; resolves when it is in the database or a write failed. */
  flush(): Promise<void> {
    this.clearTimer();
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
      // Rows queued after the drain's last look (by a microtask before this one) found it running.
      if (!this.closing) this.plan(performance.now());
    });
    return this.running;
  }

  /**
   * Flush at shutdown: retry a failing database for up to `retryMs`, then drop what is left
   * (logged and counted), so shutdown never waits on a dead disk.
   */
  async close(retryMs = CLOSE_RETRY_MS): Promise<void> {
    this.closing = true;
    this.fileWatch?.stop();
    const deadline = performance.now() + retryMs;
    await this.flush();
    while (this.queue.length > 0 && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, Math.min(this.retryDelay, Math.max(0, deadline - performance.now()))));
      this.clearRetry();
      await this.flush();
    }
    this.clearRetry();
    if (this.queue.length > 0) {
      const n = this.queue.length;
      this.log.error({ count: n, error: this.failure }, `shutdown: ${n} generation records could not be written and are lost`);
      this.drop(this.queue.splice(0), 'shutdown');
    }
  }

  private schedule(ms: number): void {
    if (ms <= 0) {
      if (this.timerImmediate) return;
      this.clearTimer();
      // A macrotask later, so that rows finishing in the same turn share the transaction.
      this.timer = setTimeout(() => void this.flush(), 0);
      this.timerImmediate = true;
    } else if (!this.timer) {
      this.timerDueAt = performance.now() + ms;
      this.timer = setTimeout(this.onTimer, ms);
      this.timer.unref();
    }
  }

  /** The flush timer fired: note how late (the event loop's delay), then write the batch. */
  private readonly onTimer = (): void => {
    this.recentLateMs = Math.max(performance.now() - this.timerDueAt, this.recentLateMs * RECENT_DECAY);
    void this.flush();
  };

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerImmediate = false;
  }

  private clearRetry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  /** Drop the oldest rows beyond `max_queued`. */
  private shed(): void {
    const extra = this.queue.length - this.settings.max_queued;
    const rows = this.queue.splice(0, extra);
    this.log.error({ count: extra, max_queued: this.settings.max_queued, error: this.failure }, 'record queue full (records.max_queued): dropping the oldest generation records');
    this.drop(rows, 'queue_full');
  }

  private drop(rows: readonly GenerationsTable[], reason: string): void {
    for (const row of rows) this.forget(row);
    this.dropped += rows.length;
    this.hooks.dropped?.(rows.length, reason);
  }

  private forget(row: GenerationsTable): void {
    this.byId.delete(row.id);
    const w = this.waiters.get(row.id);
    if (w) {
      this.waiters.delete(row.id);
      w();
    }
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      const oldestAt = this.oldestAt;
      this.queue = [];
      const started = performance.now();
      const left = await this.writeRows(batch);
      if (left.length === 0) {
        const end = performance.now();
        this.recentWriteMs = Math.max(end - started, this.recentWriteMs * RECENT_DECAY);
        this.hooks.committed?.(end - started, end - oldestAt);
        if (this.failure) {
          this.log.error({ queued: this.queue.length }, 'generation records can be written again');
          this.failure = null;
          this.retryDelay = RETRY_MIN_MS;
        }
        continue;
      }
      // The database refused: keep the rows first in line and retry later.
      this.queue = left.concat(this.queue);
      this.oldestAt = performance.now();
      // In strict durability a response waits for one try only; the row stays visible to lookups.
      for (const row of left) {
        this.forget(row);
        this.byId.set(row.id, row);
      }
      if (!this.closing) {
        this.clearRetry();
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          void this.flush();
        }, this.retryDelay);
        this.retryTimer.unref();
      }
      this.retryDelay = Math.min(this.retryDelay * 2, RETRY_MAX_MS);
      return;
    }
  }

  /**
   * Insert rows with their rollups, {@link sliceRows} rows per transaction with a turn of
   * the event loop between two slices; within each, {@link insert} yields the loop every
   * {@link sliceMs} ms (better-sqlite3 runs each statement synchronously, and kysely's awaits
   * between them are microtasks, so without that one transaction would be one unbroken stretch
   * of the loop). Each slice commits its rows with their rollups, so the rollups stay exact
   * whatever slice fails.
   * @returns the rows not written because the database failed: the failing slice's rows not yet
   *   written and every later slice's, in queue order.
   */
  private async writeRows(batch: GenerationsTable[]): Promise<GenerationsTable[]> {
    for (let i = 0; i < batch.length; i += this.sliceRows) {
      if (i > 0) await yieldToLoop();
      const end = Math.min(batch.length, i + this.sliceRows);
      const left = await this.writeSlice(batch.slice(i, end), batch.length - end);
      if (left.length > 0) return end < batch.length ? left.concat(batch.slice(end)) : left;
    }
    return [];
  }

  /**
   * Insert one slice of rows with their rollups in one transaction, or, when the database refuses
   * it for one bad row, row by row; `behind` rows of the batch wait after it (for the log).
   * @returns the rows not written because the database failed.
   */
  private async writeSlice(batch: GenerationsTable[], behind: number): Promise<GenerationsTable[]> {
    const rows = batch.map((r) => this.bounded(r));
    const fileProblem = this.fileWatch?.check();
    try {
      await this.insert(rows);
      this.committed(batch, rows);
      return [];
    } catch (err) {
      if (isEnvironmentError(err)) return this.failed(err, batch, fileProblem, behind);
      this.log.warn?.({ err: describeWriteError(err), count: rows.length }, 'a batch of generation records was refused; writing its rows one by one');
    }
    // One bad row must not take its batch down: write each row alone.
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      try {
        await this.insert([row]);
        this.committed([batch[i]!], [row]);
        continue;
      } catch (err) {
        if (isEnvironmentError(err)) return this.failed(err, batch.slice(i), fileProblem, behind);
        const reduced = degradedRow(row, err);
        try {
          await this.insert([reduced]);
          this.log.error({ err: describeWriteError(err), generation: row.id }, 'a generation record was refused by the database; stored without its usage, cost and text (see its detail.record_error)');
          this.committed([batch[i]!], [reduced]);
        } catch (err2) {
          if (isEnvironmentError(err2)) return this.failed(err2, batch.slice(i), fileProblem, behind);
          this.log.error({ err: describeWriteError(err), generation: row.id }, 'a generation record was refused by the database and dropped');
          this.drop([batch[i]!], 'invalid_record');
        }
      }
    }
    return [];
  }

  /**
   * One transaction: the rows and their rollups, yielding the event loop whenever it has held it
   * {@link sliceMs} ms ({@link loopPace}, asked between rows and statements). Throws the first error of the transaction (the
   * failed INSERT, rollup or COMMIT): SQLite rolls back by itself on SQLITE_FULL, SQLITE_READONLY
   * or an I/O error, so the ROLLBACK that follows fails with "no transaction is active"; that
   * error is ignored and never hides the real cause.
   */
  private async insert(rows: readonly GenerationsTable[]): Promise<void> {
    const trx = await this.db.startTransaction().execute();
    const pace = loopPace(this.sliceMs);
    try {
      await sqlDialectOf(trx).insertRows(trx, 'generations', rows, pace);
      await applyRollups(trx, rows, pace);
      await trx.commit().execute();
    } catch (err) {
      await trx.rollback().execute().catch(() => {});
      throw err;
    }
  }

  private bounded(row: GenerationsTable): GenerationsTable {
    const b = boundRow(row);
    // Counted once per record: usage clamped upstream of the writer (meterUsage) was counted there.
    if (b.detail !== row.detail && !row.detail.includes(USAGE_CLAMPED)) this.hooks.clamped?.();
    return b;
  }

  private committed(queued: readonly GenerationsTable[], rows: readonly GenerationsTable[]): void {
    for (const row of queued) this.forget(row);
    this.written += rows.length;
    this.onWritten?.(rows);
  }

  private failed(err: unknown, rows: GenerationsTable[], fileProblem: string | null | undefined, behind: number): GenerationsTable[] {
    const error = describeWriteError(err);
    const count = rows.length + behind;
    this.hooks.writeFailed?.(error.code);
    const message = fileProblem ?? `generation records cannot be written: ${error.code}: ${error.message}`;
    if (this.failure === null) {
      this.log.error({ err: error, count, retryInMs: this.retryDelay }, `${message}; retrying with backoff, /ready answers 503 until a write succeeds`);
    } else {
      (this.log.warn ?? this.log.error).call(this.log, { err: error, count, queued: count + this.queue.length, retryInMs: this.retryDelay }, 'generation records still cannot be written; retrying');
    }
    this.failure = message;
    return rows;
  }
}
