import { sql, type Kysely } from 'kysely';
import { sqlDialectOf } from './sql-dialect.js';
import type { Database } from './schema.js';

/**
 * Who runs a background job (retention purge) when several gateway processes share a database:
 * the one process holding the job's lease. A process asks before each run; the holder keeps the
 * lease until it closes it or dies.
 */
export interface FleetLease {
  /**
   * Whether this process holds the lease now (taking it when free; a lease whose connection was
   * lost is taken again). False when another process holds it.
   * @throws the database's error when the database cannot be asked (the caller retries later).
   */
  holds(): Promise<boolean>;
  /** Give the lease up (at shutdown). */
  close(): Promise<void>;
}

/** SQLite (one machine): every process holds it (`serve --workers` runs jobs in worker 1 only). */
const always: FleetLease = { holds: async () => true, close: async () => {} };

interface Held {
  conn: Kysely<Database>;
  release: () => void;
  done: Promise<void>;
}

/**
 * PostgreSQL: a session advisory lock (`pg_try_advisory_lock`, keyed by job name and schema),
 * held on one pooled connection for as long as the process lives. It is released when the
 * holder closes the lease or when its connection ends (a crashed replica), and the next
 * replica whose timer fires takes it over. The holder checks its connection before each run;
 * a connection that was terminated (`pg_terminate_backend`, a restart: its 'error' event is
 * listened to by the pool, see database.ts) is given back and the lease asked for again.
 */
class PostgresLease implements FleetLease {
  private held: Held | undefined;
  private closed = false;
  private readonly lockKey;

  constructor(private readonly db: Kysely<Database>, job: string) {
    this.lockKey = sql`hashtextextended(${`opinference:job:${job}:`} || coalesce(current_schema(), ''), 0)`;
  }

  async holds(): Promise<boolean> {
    if (this.closed) return false;
    if (this.held) {
      try {
        await sql`select 1`.execute(this.held.conn);
        return true;
      } catch {
        this.held.release();
        this.held = undefined;
      }
    }
    return new Promise<boolean>((resolve, reject) => {
      let release = () => {};
      const gate = new Promise<void>((r) => (release = r));
      const done = this.db
        .connection()
        .execute(async (conn) => {
          const row = (await sql<{ got: boolean }>`select pg_try_advisory_lock(${this.lockKey}) as got`.execute(conn)).rows[0];
          if (!row?.got) return resolve(false);
          if (this.closed) release();
          else this.held = { conn, release, done };
          resolve(!this.closed);
          await gate;
          await sql`select pg_advisory_unlock(${this.lockKey})`.execute(conn).catch(() => {});
        })
        .catch((err: unknown) => {
          if (this.held?.done === done) this.held = undefined;
          reject(err); // no effect once resolved (the lock was taken, the unlock failed with the connection)
        });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const held = this.held;
    this.held = undefined;
    if (!held) return;
    held.release();
    await held.done;
  }
}

/** The lease of background job `job` on this database (see {@link FleetLease}). */
export function fleetLease(db: Kysely<Database>, job: string): FleetLease {
  return sqlDialectOf(db).name === 'postgres' ? new PostgresLease(db, job) : always;
}
