import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { attachSqliteHandle, type DialectName } from './sql-dialect.js';
import { GatewayError, toGatewayError } from '../errors/gateway-error.js';
import type { Database } from './schema.js';

/** Default database: an embedded SQLite file under `./data`. */
export const DEFAULT_DATABASE_URL = 'sqlite:./data/opinference.db';

/** An open database and how to close it. */
export interface OpenDatabase {
  db: Kysely<Database>;
  /** `sqlite` or `postgres`; queries get the matching SQL fragments from `sqlDialectOf(db)` (dialect.ts). */
  dialect: DialectName;
  /** Where it lives, for logs (never includes a password). */
  location: string;
  close(): Promise<void>;
}

/** Whether a database URL names PostgreSQL (`postgres://…` or `postgresql://…`). */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/** Where a database URL points: a PostgreSQL URL, or a SQLite file (absolute path) or `:memory:`. */
export type DatabaseTarget = { engine: 'postgres'; url: string } | { engine: 'sqlite'; file: string };

/** The forms a database URL may take, for error messages. */
const ACCEPTED_FORMS = 'use postgres://… or sqlite:<path> (sqlite:///absolute/path, sqlite://relative/path, file:<path>, file:///absolute/path)';

/**
 * Read a database URL (`OP_DATABASE_URL`, `migrate --from/--to`) without opening anything:
 * - `postgres://…` / `postgresql://…`: PostgreSQL, the URL as given;
 * - `sqlite:<path>`, `sqlite://<relative path>`, `sqlite:///<absolute path>` (the form most tools
 *   write; `sqlite:////abs` works too), or a bare path: a SQLite file, taken literally;
 * - `file:<relative path>`, `file:///<absolute path>`, `file://localhost/<absolute path>`: a
 *   SQLite file, percent-decoded as file URLs are;
 * - `sqlite::memory:`, `sqlite:` or `file::memory:`: an in-memory database.
 * Relative paths are resolved against the working directory.
 * @throws Error naming what is wrong, for another scheme, a URL form with a query string or
 *   fragment (SQLite URI parameters such as `?mode=ro` are not supported), a `file:` URL on
 *   another host or with bad percent-encoding, or a URL that names no file (`sqlite://`,
 *   `sqlite:///`, a path ending in `/`).
 */
export function parseDatabaseUrl(url: string): DatabaseTarget {
  if (isPostgresUrl(url)) return { engine: 'postgres', url };
  const bad = (why: string): Error => new Error(`database URL ${JSON.stringify(url)}: ${why}; ${ACCEPTED_FORMS}`);
  let path: string;
  if (/^sqlite:/i.test(url)) {
    path = url.slice('sqlite:'.length);
    if (/[?#]/.test(path)) throw bad('query parameters and fragments are not supported');
    if (path.startsWith('//')) {
      // URL forms: `sqlite:///abs` has an empty host and the path /abs; `sqlite://rel` is relative.
      path = path.slice(2);
      if (path === '' || path === '/') throw bad('names no file');
    }
  } else if (/^file:/i.test(url)) {
    const rest = url.slice('file:'.length);
    if (/[?#]/.test(rest)) throw bad('query parameters and fragments are not supported');
    if (rest.startsWith('//')) {
      const host = rest.slice(2, rest.indexOf('/', 2) === -1 ? undefined : rest.indexOf('/', 2));
      if (host !== '' && host.toLowerCase() !== 'localhost') throw bad(`names a file on host ${JSON.stringify(host)}; only local files can be opened`);
      try {
        path = fileURLToPath(`file://${rest.slice(2 + host.length)}`);
      } catch (err) {
        throw bad((err as Error).message);
      }
    } else {
      try {
        path = decodeURIComponent(rest);
      } catch {
        throw bad('bad percent-encoding');
      }
    }
    if (path === '') throw bad('names no file');
  } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new Error(`OP_DATABASE_URL: unsupported database URL scheme "${url.slice(0, url.indexOf(':'))}"; ${ACCEPTED_FORMS}`);
  } else {
    path = url;
  }
  if (path === ':memory:' || path === '') return { engine: 'sqlite', file: ':memory:' };
  if (path.endsWith('/')) throw bad('names a directory, not a file');
  return { engine: 'sqlite', file: resolve(path) };
}

/**
 * Open the database named by `OP_DATABASE_URL` (the forms {@link parseDatabaseUrl} reads):
 * PostgreSQL (`postgres://user:password@host:port/db`, any libpq-style parameter in the query
 * string, e.g. `?sslmode=require` or `?options=-c%20search_path%3Dgateway`) or a SQLite file.
 * Nothing connects until the first query (the migrations, at start).
 * `existing` refuses a SQLite file that does not exist yet (instead of creating it).
 * @throws Error for a URL {@link parseDatabaseUrl} refuses, or a missing file with `existing`.
 */
export function openDatabase(url: string = DEFAULT_DATABASE_URL, options: { existing?: boolean } = {}): OpenDatabase {
  const target = parseDatabaseUrl(url);
  if (target.engine === 'postgres') return openPostgres(target.url);
  const file = target.file;
  const memory = file === ':memory:';
  if (!memory && options.existing && !existsSync(file)) throw new Error(`no SQLite database at ${file}`);
  if (!memory) mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  const cached = withStatementCache(sqlite);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.defaultSafeIntegers(false);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: cached }) });
  // The record writer's inserts run prepared statements of their own on this one connection.
  attachSqliteHandle(db, sqlite);
  return { db, dialect: 'sqlite', location: file, close: () => db.destroy() };
}

/** `postgres://user@host:port/db` without the password (and without the query string). */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    u.search = '';
    return u.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/**
 * PostgreSQL's `bigint` (int8: times in ms, picodollars, counts) arrives as a number when it is a
 * safe integer, as SQLite's do, and as its decimal text otherwise (so `BigInt(x)` stays exact;
 * picodollar sums are read as text on both engines). `numeric` (what `sum(bigint)` returns)
 * stays text.
 */
function parseInt8(text: string): number | string {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : text;
}

const INT8_OID = 20;
const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => (oid === INT8_OID && format !== 'binary' ? parseInt8 : pg.types.getTypeParser(oid, format as 'text'))) as typeof pg.types.getTypeParser,
};

/**
 * Session settings of the gateway's connections, unless the URL's `options` sets them:
 * `work_mem` 32MB, because the usage reads sort or hash a few MB (7 days of hourly tag rollups
 * with their histograms: ~7 MB; the 30-day session ranking: ~18 MB), which PostgreSQL's 4MB
 * default sends to temporary files.
 */
const SESSION_DEFAULTS: Record<string, string> = { work_mem: '32MB' };

/** The URL with {@link SESSION_DEFAULTS} added to its `options` parameter (`-c name=value`). */
export function withSessionDefaults(url: string): string {
  const u = new URL(url);
  const options = u.searchParams.get('options') ?? '';
  const added = Object.entries(SESSION_DEFAULTS)
    .filter(([name]) => !new RegExp(`\\b${name}\\s*=`).test(options))
    .map(([name, value]) => `-c ${name}=${value}`);
  if (added.length === 0) return url;
  u.searchParams.set('options', [options, ...added].filter(Boolean).join(' '));
  return u.toString();
}

/** Longest wait for a new PostgreSQL connection, in ms: an unreachable server fails the query instead of hanging it. */
export const CONNECT_TIMEOUT_MS = 5_000;

/**
 * A PostgreSQL connection that could not be made, naming the database (never the password) and
 * keeping the cause's `code` (`ECONNREFUSED`, `57P03` "the database system is starting up",
 * `28P01` …), so callers tell an outage from a bad query ({@link isDatabaseUnreachable}).
 */
export class DatabaseConnectError extends Error {
  readonly code: string;
  constructor(location: string, cause: unknown) {
    const e = cause as { code?: unknown; message?: unknown } | null;
    super(`database ${location}: ${typeof e?.message === 'string' && e.message ? e.message : String(cause)}`, { cause });
    this.name = 'DatabaseConnectError';
    this.code = typeof e?.code === 'string' && e.code ? e.code : 'ECONNECT';
  }
}

/**
 * True when an error says the database server cannot be reached or its connection was lost (the
 * query itself may be fine; retried later it can succeed): PostgreSQL SQLSTATE classes 08
 * (connection exception) and 57 (operator intervention: `57P01` terminated by an administrator,
 * `57P03` starting up or shutting down), `53300` (too many connections), a network error of the
 * client (`ECONNREFUSED`, `ETIMEDOUT` …), a {@link DatabaseConnectError}, or pg's own messages for
 * a dead connection. False for SQL errors and for anything SQLite reports.
 */
export function isDatabaseUnreachable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (/^(08|57)[0-9A-Z]{3}$/.test(code) || code === '53300' || code === 'ECONNECT') return true;
  if (/^(ECONN|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_)/.test(code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|is not queryable|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message);
}

/**
 * `thrown` as the error a client gets: `database_unavailable` (503, retryable, `Retry-After: 1`)
 * when {@link isDatabaseUnreachable}, else {@link toGatewayError} (an unknown error is
 * `internal_error`).
 */
export function gatewayErrorOf(thrown: unknown): GatewayError {
  if (thrown instanceof GatewayError || !isDatabaseUnreachable(thrown)) return toGatewayError(thrown);
  return new GatewayError('database_unavailable', 'the database cannot be reached; retry shortly', { retryAfterSeconds: 1, cause: thrown });
}

function openPostgres(url: string): OpenDatabase {
  const pool = new pg.Pool({ connectionString: withSessionDefaults(url), types: pgTypes, max: 10, application_name: 'opinference', connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  // An idle client losing its connection (server restart, network) is replaced by the pool; without a listener the error would end the process.
  pool.on('error', () => {});
  // pg-pool listens for errors of idle clients only: a checked-out client (a query running, a
  // transaction, the retention purge's lease held for hours) whose connection is terminated
  // (pg_terminate_backend, a restart, a pooler's idle timeout) emits 'error' with no listener,
  // which would end the process. The query in progress fails with the error itself; a client
  // that errored is discarded when it is released.
  pool.on('connect', (client) => client.on('error', () => {}));
  const location = redactDatabaseUrl(url);
  // A connection that cannot be made says which database it was for (never the password), with the cause's code.
  const named = {
    connect: () =>
      pool.connect().catch((err: unknown) => {
        throw new DatabaseConnectError(location, err);
      }),
    end: () => pool.end(),
  };
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: named as unknown as pg.Pool }) });
  return { db, dialect: 'postgres', location, close: () => db.destroy() };
}

/**
 * Kysely prepares a statement for every query it runs; better-sqlite3 statements are reusable,
 * so keep the most recent ones by SQL text (the record writer and lookups repeat a few shapes).
 */
function withStatementCache(sqlite: SQLite.Database, size = 256): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  return new Proxy(sqlite, {
    get(target, prop, receiver) {
      if (prop === 'prepare') {
        return (source: string) => {
          let stmt = cache.get(source);
          if (stmt) {
            cache.delete(source);
          } else {
            stmt = target.prepare(source);
            if (cache.size >= size) cache.delete(cache.keys().next().value as string);
          }
          cache.set(source, stmt);
          return stmt;
        };
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * Run `fn` in `db` when it is a transaction already (Kysely transactions do not nest: a change
 * and its audit row share the caller's), else in a transaction of its own.
 */
export function inTransaction<T>(db: Kysely<Database>, fn: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}
