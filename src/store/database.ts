import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { Database } from './schema.js';

/** Default database: an embedded SQLite file under `./data`. */
export const DEFAULT_DATABASE_URL = 'sqlite:./data/opinference.db';

/** An open database and how to close it. */
export interface OpenDatabase {
  db: Kysely<Database>;
  /** `sqlite` or `postgres`. */
  dialect: 'sqlite';
  /** Where it lives, for logs (never includes a password). */
  location: string;
  close(): Promise<void>;
}

/**
 * Open the database named by `OP_DATABASE_URL`: `sqlite:<path>` (or a bare path, or
 * `sqlite::memory:`). PostgreSQL (`postgres://…`) uses the same query layer and comes with the
 * shared-database work.
 * @throws Error for an unsupported URL scheme.
 */
export function openDatabase(url: string = DEFAULT_DATABASE_URL): OpenDatabase {
  if (/^postgres(ql)?:\/\//.test(url)) {
    throw new Error('OP_DATABASE_URL: PostgreSQL is not supported by this version yet; use sqlite:<path>');
  }
  const path = url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : url;
  const memory = path === ':memory:' || path === '';
  const file = memory ? ':memory:' : resolve(path);
  if (!memory) mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  const cached = withStatementCache(sqlite);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.defaultSafeIntegers(false);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: cached }) });
  return { db, dialect: 'sqlite', location: file, close: () => db.destroy() };
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
