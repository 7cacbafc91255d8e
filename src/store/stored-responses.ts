import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import { describeWriteError, isEnvironmentError } from './record-guard.js';

const DAY_MS = 86_400_000;
/** Rows deleted per statement by the purge. */
const PURGE_BATCH = 2_000;

/** A stored response as the Responses adapter keeps it (the `body` column, parsed). */
export interface StoredResponse {
  /** The Responses API object as it was sent to the client. */
  response: Record<string, unknown>;
  /**
   * The input items it answered, those of every earlier response of its `previous_response_id`
   * chain first (so continuing a conversation is one read).
   */
  input: unknown[];
  /**
   * The response cache entry (its key) the response was stored in or answered from, when the
   * request used the cache: deleting the response deletes it.
   */
  cache_key?: string;
}

/** Most bytes of stored responses (their JSON) held in memory while the database cannot be written: 64 MiB. */
export const MAX_PENDING_RESPONSE_BYTES = 64 * 1024 * 1024;
/** First retry delay of stored responses that could not be written, in ms; doubles per failure up to {@link RESPONSE_RETRY_MAX_MS}. */
const RESPONSE_RETRY_MIN_MS = 100;
/** Longest delay between two retries, in ms. */
const RESPONSE_RETRY_MAX_MS = 5_000;

type StoredRow = Database['stored_responses'];

/** Minimal logger shape (pino-compatible). */
interface StoreLogger {
  error(obj: object, msg: string): void;
}

/**
 * Responses API objects kept for `GET /v1/responses/{id}` and `previous_response_id`, in the
 * gateway's database (portable kysely queries: SQLite and PostgreSQL). A response is stored only
 * when the request's retention keeps text, and expires with it.
 *
 * A response that cannot be written because the database is down (disk full, PostgreSQL
 * unreachable: `isEnvironmentError`) waits in memory, in order, and is retried with backoff
 * (100 ms … 5 s) until written; meanwhile this process reads and deletes it from memory, so a
 * conversation continues on it. At most {@link MAX_PENDING_RESPONSE_BYTES} wait; beyond, the
 * save fails (the caller warns).
 */
export class StoredResponseStore {
  private readonly pending = new Map<string, StoredRow>();
  private pendingBytes = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelay = RESPONSE_RETRY_MIN_MS;
  private writing: Promise<void> | undefined;

  constructor(private readonly db: Kysely<Database>, private readonly log?: StoreLogger) {}

  /** Stored responses waiting in memory for the database. */
  get queued(): number {
    return this.pending.size;
  }

  /**
   * Keep one response. `retention` is the request's retention in days (`none` stores nothing);
   * `createdAt` unix ms. Resolves once written, or once queued for a retry when the database
   * cannot be written.
   * @throws the database's error for a row it refuses, or Error when the database is down and
   * {@link MAX_PENDING_RESPONSE_BYTES} already wait.
   */
  async save(id: string, keyId: string | null, createdAt: number, retention: 'none' | number, value: StoredResponse): Promise<void> {
    if (retention === 'none') return;
    const row: StoredRow = { id, key_id: keyId, created_at: createdAt, expires_at: createdAt + retention * DAY_MS, body: JSON.stringify(value) };
    // Behind others waiting: keep the order (and do not hit a database known to be down).
    if (this.pending.size === 0) {
      try {
        await this.db.insertInto('stored_responses').values(row).execute();
        return;
      } catch (err) {
        if (!isEnvironmentError(err)) throw err;
        this.log?.error({ err: describeWriteError(err), response: id }, 'a stored response cannot be written now; kept in memory and retried');
      }
    }
    if (this.pendingBytes + row.body.length > MAX_PENDING_RESPONSE_BYTES) {
      throw new Error(`the database cannot be written and ${this.pending.size} stored responses (${this.pendingBytes} bytes) already wait for it`);
    }
    this.pending.set(id, row);
    this.pendingBytes += row.body.length;
    this.scheduleRetry();
  }

  /**
   * The stored response `id` if the key `keyId` (null: the admin key) owns it and its retention
   * has not run out; undefined otherwise (another key's response reads as absent).
   */
  async get(id: string, keyId: string | null, now: number = Date.now()): Promise<StoredResponse | undefined> {
    const held = this.pending.get(id);
    if (held) return held.key_id === keyId && (held.expires_at === null || Number(held.expires_at) >= now) ? (JSON.parse(held.body) as StoredResponse) : undefined;
    let q = this.db.selectFrom('stored_responses').select(['body', 'expires_at']).where('id', '=', id);
    q = keyId === null ? q.where('key_id', 'is', null) : q.where('key_id', '=', keyId);
    const row = await q.executeTakeFirst();
    if (!row || (row.expires_at !== null && Number(row.expires_at) < now)) return undefined;
    return JSON.parse(row.body) as StoredResponse;
  }

  /**
   * Remove the text (`content`) of the generation record of response `id` (the same id) of key
   * `keyId`, keeping the record. @returns whether the record was found.
   */
  async clearRecordText(id: string, keyId: string | null): Promise<boolean> {
    let q = this.db.updateTable('generations').set({ content: null }).where('id', '=', id);
    q = keyId === null ? q.where('key_id', 'is', null) : q.where('key_id', '=', keyId);
    const res = await q.executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Delete a key's stored response. @returns whether one was deleted. */
  async delete(id: string, keyId: string | null): Promise<boolean> {
    const held = this.pending.get(id);
    if (held && held.key_id === keyId) {
      this.forget(id);
      return true;
    }
    let q = this.db.deleteFrom('stored_responses').where('id', '=', id);
    q = keyId === null ? q.where('key_id', 'is', null) : q.where('key_id', '=', keyId);
    const res = await q.executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /** Write what waits now (at shutdown): one try; what still fails is logged as lost. */
  async close(): Promise<void> {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    await this.writing;
    await this.writePending();
    if (this.pending.size > 0) this.log?.error({ count: this.pending.size }, `shutdown: ${this.pending.size} stored responses could not be written and are lost`);
  }

  private forget(id: string): void {
    const row = this.pending.get(id);
    if (!row) return;
    this.pending.delete(id);
    this.pendingBytes -= row.body.length;
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.writing) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.writing = this.writePending().finally(() => {
        this.writing = undefined;
        if (this.pending.size > 0) this.scheduleRetry();
      });
    }, this.retryDelay);
    this.retryTimer.unref();
  }

  /** Insert the waiting rows in order; stops at the first that fails because of the database. */
  private async writePending(): Promise<void> {
    for (const row of [...this.pending.values()]) {
      if (this.pending.get(row.id) !== row) continue; // deleted meanwhile
      try {
        await this.db.insertInto('stored_responses').values(row).execute();
      } catch (err) {
        if (isEnvironmentError(err)) {
          this.retryDelay = Math.min(this.retryDelay * 2, RESPONSE_RETRY_MAX_MS);
          return;
        }
        // A duplicate id: an earlier try was committed although its answer was lost with the connection.
        if (!/^(23505|SQLITE_CONSTRAINT_PRIMARYKEY)$/.test(describeWriteError(err).code)) this.log?.error({ err: describeWriteError(err), response: row.id }, 'a stored response was refused by the database and dropped');
      }
      this.forget(row.id);
    }
    if (this.retryDelay !== RESPONSE_RETRY_MIN_MS) this.log?.error({}, 'stored responses can be written again');
    this.retryDelay = RESPONSE_RETRY_MIN_MS;
  }
}

/**
 * Delete stored responses whose retention has run out (`expires_at < now`), in batches.
 * @returns how many were deleted.
 */
export async function purgeExpiredResponses(db: Kysely<Database>, now: number = Date.now()): Promise<number> {
  let purged = 0;
  for (;;) {
    const res = await db
      .deleteFrom('stored_responses')
      .where('id', 'in', (eb) => eb.selectFrom('stored_responses').select('id').where('expires_at', '<', now).limit(PURGE_BATCH))
      .executeTakeFirst();
    const n = Number(res.numDeletedRows);
    purged += n;
    if (n < PURGE_BATCH) return purged;
  }
}
