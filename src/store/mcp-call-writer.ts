import type { Kysely } from 'kysely';
import type { Database, McpToolCallsTable } from './schema.js';
import { describeWriteError, isEnvironmentError } from './record-guard.js';
import { CLOSE_RETRY_MS, RETRY_MAX_MS, RETRY_MIN_MS, type WriterLogger } from './generation-writer.js';

/** Most rows of one INSERT statement (SQLite binds at most 32 766 values; 18 columns each). */
const INSERT_CHUNK = 200;
/** Longest text kept in `error_message`, in characters. */
const MAX_ERROR_MESSAGE = 2_000;
/** Longest text kept in `arguments` or `result`, in characters (a longer one is cut and says so). */
export const MAX_CALL_TEXT = 1_000_000;

/** What the MCP call writer reports to metrics. */
export interface McpCallWriterHooks {
  /** A batch write failed and will be retried; `code` is the error's code (`SQLITE_FULL`, `ECONNREFUSED`). */
  writeFailed?(code: string): void;
  /** Records given up on: `reason` is `invalid_record`, `queue_full` or `shutdown`. */
  dropped?(count: number, reason: string): void;
}

/**
 * Writes MCP tool-call records (`mcp_tool_calls`) off the call path, the generation writer's
 * pattern at a smaller scale (store/generation-writer.ts): {@link add} queues a row and returns
 * at once; a batch is written every `intervalMs` (or the next turn when `batchSize` rows wait), in one
 * transaction of 200-row statements a turn of the event loop apart. Nothing blocks a call and
 * nothing is lost silently: a database that cannot be
 * written (disk full, read-only, PostgreSQL unreachable: record-guard.ts `isEnvironmentError`)
 * keeps the rows queued and retries with backoff ({@link RETRY_MIN_MS}…{@link RETRY_MAX_MS}),
 * logged once with its real error; past `maxQueued` the oldest rows are dropped and counted; a
 * batch refused because of one bad row is written row by row and the bad row dropped, logged and
 * counted. Text columns are cut to {@link MAX_CALL_TEXT} characters.
 */
export class McpCallWriter {
  private queue: McpToolCallsTable[] = [];
  private timer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelay = RETRY_MIN_MS;
  private running: Promise<void> | undefined;
  private failure: string | null = null;
  private closing = false;
  /** A flush is scheduled for the next turn (a full batch). */
  private soon = false;
  /** Rows written since start. */
  written = 0;
  /** Rows given up on since start. */
  dropped = 0;
  hooks: McpCallWriterHooks = {};

  constructor(
    private readonly db: Kysely<Database>,
    private readonly log: WriterLogger,
    private intervalMs = 200,
    private readonly batchSize = 500,
    private maxQueued = 100_000,
  ) {}

  /** Apply `records.flush_interval_ms` and `records.max_queued` (at start and on reload). */
  configure(settings: { flush_interval_ms?: number; max_queued?: number }): void {
    if (settings.flush_interval_ms !== undefined) this.intervalMs = settings.flush_interval_ms;
    if (settings.max_queued !== undefined) this.maxQueued = Math.max(settings.max_queued, this.batchSize);
  }

  /** Rows waiting to be written. */
  get queued(): number {
    return this.queue.length;
  }

  /** Why records cannot be written now (the last write error), or null when they can. */
  get problem(): string | null {
    return this.failure;
  }

  /** Queue one record; never throws, never waits. */
  add(row: McpToolCallsTable): void {
    this.queue.push(row);
    if (this.queue.length > this.maxQueued) {
      const extra = this.queue.splice(0, this.queue.length - this.maxQueued);
      this.log.error({ count: extra.length, max_queued: this.maxQueued, error: this.failure }, 'MCP call record queue full (records.max_queued): dropping the oldest MCP call records');
      this.drop(extra.length, 'queue_full');
    }
    if (this.retryTimer || this.closing) return; // a failing database: the retry timer drives the writes
    // A full batch is written a turn later (never inside the caller's turn: the call's answer goes first).
    if (this.queue.length >= this.batchSize) {
      if (!this.soon) {
        this.soon = true;
        setImmediate(() => {
          this.soon = false;
          void this.flush();
        });
      }
    } else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.intervalMs);
      this.timer.unref();
    }
  }

  /** Write everything queued now; resolves when it is in the database or a write failed. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Flush at shutdown: retry a failing database for up to `retryMs`, then drop what is left (logged and counted). */
  async close(retryMs = CLOSE_RETRY_MS): Promise<void> {
    this.closing = true;
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
      this.queue = [];
      this.log.error({ count: n, error: this.failure }, `shutdown: ${n} MCP call records could not be written and are lost`);
      this.drop(n, 'shutdown');
    }
  }

  private clearRetry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  private drop(count: number, reason: string): void {
    this.dropped += count;
    this.hooks.dropped?.(count, reason);
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      const left = await this.writeBatch(batch);
      if (left.length === 0) {
        if (this.failure) {
          this.log.error({ queued: this.queue.length }, 'MCP call records can be written again');
          this.failure = null;
          this.retryDelay = RETRY_MIN_MS;
        }
        continue;
      }
      this.queue = left.concat(this.queue);
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

  /** One transaction for the batch, else (one bad row) row by row. @returns the rows not written because the database failed. */
  private async writeBatch(batch: McpToolCallsTable[]): Promise<McpToolCallsTable[]> {
    const rows = batch.map(bounded);
    try {
      await this.db.transaction().execute(async (trx) => {
        for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
          // SQLite runs each statement synchronously: a turn of the event loop between chunks keeps it free.
          if (i > 0) await new Promise((r) => setImmediate(r));
          await trx.insertInto('mcp_tool_calls').values(rows.slice(i, i + INSERT_CHUNK)).execute();
        }
      });
      this.written += rows.length;
      return [];
    } catch (err) {
      if (isEnvironmentError(err)) return this.failed(err, batch);
      this.log.warn?.({ err: describeWriteError(err), count: rows.length }, 'a batch of MCP call records was refused; writing its rows one by one');
    }
    for (let i = 0; i < rows.length; i++) {
      try {
        await this.db.insertInto('mcp_tool_calls').values(rows[i]!).execute();
        this.written += 1;
      } catch (err) {
        if (isEnvironmentError(err)) return this.failed(err, batch.slice(i));
        this.log.error({ err: describeWriteError(err), call: rows[i]!.id }, 'an MCP call record was refused by the database and dropped');
        this.drop(1, 'invalid_record');
      }
    }
    return [];
  }

  private failed(err: unknown, rows: McpToolCallsTable[]): McpToolCallsTable[] {
    const error = describeWriteError(err);
    this.hooks.writeFailed?.(error.code);
    const message = `MCP call records cannot be written: ${error.code}: ${error.message}`;
    if (this.failure === null) this.log.error({ err: error, count: rows.length, retryInMs: this.retryDelay }, `${message}; retrying with backoff`);
    else (this.log.warn ?? this.log.error).call(this.log, { err: error, count: rows.length, queued: rows.length + this.queue.length, retryInMs: this.retryDelay }, 'MCP call records still cannot be written; retrying');
    this.failure = message;
    return rows;
  }
}

const cut = (s: string | null, max: number): string | null => (s === null || s.length <= max ? s : `${s.slice(0, max)}…[cut at ${max} characters]`);

/** The row inside its columns: whole non-negative ms and bytes, text cut to length. */
function bounded(row: McpToolCallsTable): McpToolCallsTable {
  const whole = (n: number, max: number) => (Number.isFinite(n) ? Math.min(Math.max(Math.round(n), 0), max) : 0);
  return {
    ...row,
    latency_ms: whole(row.latency_ms, 2 ** 31 - 1),
    request_bytes: whole(row.request_bytes, Number.MAX_SAFE_INTEGER),
    response_bytes: whole(row.response_bytes, Number.MAX_SAFE_INTEGER),
    server: row.server.slice(0, 200),
    tool: row.tool.slice(0, 500),
    error_code: cut(row.error_code, 200),
    error_message: cut(row.error_message, MAX_ERROR_MESSAGE),
    arguments: cut(row.arguments, MAX_CALL_TEXT),
    result: cut(row.result, MAX_CALL_TEXT),
  };
}
