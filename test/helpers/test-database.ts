import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase, type OpenDatabase } from '../../src/store/database.js';
import type { DialectName } from '../../src/store/sql-dialect.js';
import { randomId } from '../../src/util/ids.js';

/**
 * Where tests keep their data: `OP_TEST_DATABASE_URL=postgres://…` runs every test on
 * PostgreSQL (each test database is a fresh schema of that database, dropped afterwards);
 * unset, each test database is a SQLite file in a temporary directory.
 */
export const TEST_DATABASE_URL = process.env.OP_TEST_DATABASE_URL || undefined;

/** The engine the tests run on. */
export const TEST_DIALECT: DialectName = TEST_DATABASE_URL ? 'postgres' : 'sqlite';

/** Skip reason for a test that only makes sense on SQLite (`false` when running on SQLite). */
export function sqliteOnly(reason: string): string | false {
  return TEST_DIALECT === 'sqlite' ? false : `SQLite only: ${reason}`;
}

/** A fresh, empty test database (not migrated). */
export interface TestDatabase {
  /** The URL to give `OP_DATABASE_URL` (e.g. for a spawned CLI). */
  url: string;
  /** For SQLite, the database file; null for PostgreSQL. */
  file: string | null;
  /** Opens (another) connection to it; the caller closes it. */
  open(): OpenDatabase;
  /** Deletes the database (close what was opened first). */
  drop(): Promise<void>;
}

/** A URL of the same PostgreSQL database whose connections use `schema` first. */
function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Create a fresh test database (a PostgreSQL schema, or a SQLite file named `name`). */
export async function createTestDatabase(name = 'test.db'): Promise<TestDatabase> {
  if (TEST_DATABASE_URL) {
    const schema = `op_test_${process.pid}_${randomId(10).toLowerCase()}`;
    await admin((c) => c.query(`create schema "${schema}"`));
    const url = withSearchPath(TEST_DATABASE_URL, schema);
    return {
      url,
      file: null,
      open: () => openDatabase(url),
      drop: () => admin((c) => c.query(`drop schema if exists "${schema}" cascade`)).then(() => undefined),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'op-test-'));
  const file = join(dir, name);
  return {
    url: `sqlite:${file}`,
    file,
    open: () => openDatabase(`sqlite:${file}`),
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}
