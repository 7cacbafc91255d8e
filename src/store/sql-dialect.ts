import type SQLite from 'better-sqlite3';
import { CompiledQuery, PostgresAdapter, sql, type ColumnDataType, type CreateTableBuilder, type DialectAdapter, type Expression, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { GENERATION_COLUMNS, GENERATION_TAG_COLUMNS, type Database } from './schema.js';
import type { Pace } from './loop-pace.js';

/** The tables the record writer appends rows to with {@link StoreDialect.insertRows}. */
export type AppendTable = 'generations' | 'generation_tags';

/**
 * A table written by "insert the row, or add to the row with the same key" (the usage rollups
 * and session counts): the columns of a row's values are `key`, then `add`, then `replace`.
 */
export interface UpsertShape {
  readonly table: keyof Database & string;
  /** The primary-key columns. */
  readonly key: readonly string[];
  /** Columns added to an existing row's (`col = table.col + excluded.col`). */
  readonly add: readonly string[];
  /** Columns that replace an existing row's (`col = excluded.col`). */
  readonly replace: readonly string[];
}

/** The columns of each {@link AppendTable}, in binding order. */
const APPEND_COLUMNS: { readonly [T in AppendTable]: readonly (keyof Database[T] & string)[] } = { generations: GENERATION_COLUMNS, generation_tags: GENERATION_TAG_COLUMNS };

/** A column type for kysely's schema builder (a name or raw SQL). */
export type DataTypeExpression = ColumnDataType | Expression<unknown>;

/** The database engines the store runs on. */
export type DialectName = 'sqlite' | 'postgres';

/**
 * The SQL that differs between SQLite and PostgreSQL, in one place. Every query of the store is
 * written once with kysely; where the two engines spell something differently, the query asks
 * the dialect of its database ({@link sqlDialectOf}) for the fragment. The record writer's
 * statements (run per batch, on the request path's CPU) are the exception:
 * {@link StoreDialect.insertRows}, {@link StoreDialect.readByKey} and
 * {@link StoreDialect.upsertAdding} run fixed SQL, prepared once per connection on SQLite,
 * instead of building a kysely query per call. Times are unix ms in `bigint` columns on both
 * engines (the usage and search queries do integer arithmetic on them), money is
 * picodollars in `bigint`, JSON is text (no query reads inside it: tags are indexed through
 * `generation_tags`, histograms are summed in JS).
 */
export interface StoreDialect {
  readonly name: DialectName;
  /**
   * Type of text columns. PostgreSQL compares text with the database's collation unless told
   * otherwise; `collate "C"` gives byte order, as SQLite does and as the cursor pagination and the
   * JS-side merges (which compare with `<`) expect, and keeps btree indexes usable for `like 'x%'`.
   */
  readonly text: DataTypeExpression;
  /**
   * Concatenation of a group's strings (`group_concat` in SQLite, `string_agg` in PostgreSQL):
   * the rollup reads sum JSON histograms from one concatenated string per group.
   */
  concatAgg(column: string): RawBuilder<string>;
  /**
   * A table stored in primary-key order: `without rowid` on SQLite (a range is read without
   * lookups, one b-tree fewer to write); PostgreSQL heap tables have no such option (unchanged).
   */
  keyOrdered<T extends string, C extends string>(table: CreateTableBuilder<T, C>): CreateTableBuilder<T, C>;
  /**
   * Make a transaction that adds to the usage rollups wait for any other doing so, until it ends.
   * The writer reads a group's histograms and writes them back merged (`applyRollups`), so two
   * writers (replicas) adding to one group at once would lose one's counts. PostgreSQL: a
   * transaction-level advisory lock (`pg_advisory_xact_lock`, released at commit or rollback);
   * SQLite: nothing (its write lock already lets one writer at a time).
   */
  serializeRollupWrites(trx: Kysely<Database>): Promise<void>;
  /**
   * Planner statistics on expressions of a table's columns (PostgreSQL `create statistics` then
   * `analyze`; nothing on SQLite, whose planner does not estimate expressions). The search writes
   * its non-driving filters as `coalesce(col, '')` so that no index serves them; without
   * statistics PostgreSQL guesses those match almost nothing and reads every row of the driving
   * filter to sort them, instead of walking its index newest first and stopping at the page.
   */
  createExpressionStatistics(db: Kysely<Database>, name: string, table: string, expressions: readonly RawBuilder<unknown>[]): Promise<void>;
  /**
   * Run `fn` holding the migration lock, so that replicas (or workers) starting together apply
   * each step once: PostgreSQL `pg_advisory_lock` on one session (keyed by the current schema),
   * SQLite `begin immediate` (the database's write lock; everything `fn` does commits together).
   * `fn` gets a Kysely bound to that one connection, and `step`, which runs one schema step: in
   * its own transaction on PostgreSQL (DDL is transactional there), inline on SQLite (already
   * inside the `begin immediate` transaction).
   */
  /**
   * Run `fn` in a transaction that reads and then writes (the batch queue's claims): SQLite
   * `begin immediate`, so it holds the write lock from the start (a deferred transaction that
   * read first fails with SQLITE_BUSY when another process wrote meanwhile, whatever the busy
   * timeout); PostgreSQL an ordinary transaction (its rows locked by the reads themselves).
   */
  writeTransaction<T>(db: Kysely<Database>, fn: (trx: Kysely<Database>) => Promise<T>): Promise<T>;
  withMigrationLock<T>(db: Kysely<Database>, fn: (conn: Kysely<Database>, step: <R>(run: (trx: Kysely<Database>) => Promise<R>) => Promise<R>) => Promise<T>): Promise<T>;
  /**
   * The plan of a query, one line per node (`EXPLAIN QUERY PLAN` / `EXPLAIN`), for benches and
   * tests. `preferIndexes` (PostgreSQL) plans with `enable_seqscan = off`: on the few rows of a
   * test, the planner rightly reads a whole table, which says nothing about whether an index can
   * serve the query at scale; with it off, a sequential scan remains only where no index can.
   */
  explain(db: Kysely<Database>, query: CompiledQuery, options?: { preferIndexes?: boolean }): Promise<string[]>;
  /** Whether a plan (from {@link explain}) reads `table` (or its alias) without any index. */
  scansWithoutIndex(plan: readonly string[], table: string): boolean;
  /**
   * Insert whole rows (every column of the table; `undefined` is stored as NULL) into
   * `generations` or `generation_tags`, inside the caller's transaction `trx`, without building
   * a query per call: SQLite runs one better-sqlite3 statement, prepared once per database handle
   * (the handle `openDatabase` registered with {@link attachSqliteHandle}), once per row;
   * PostgreSQL (and a SQLite database opened some other way) runs one fixed multi-row
   * `INSERT … VALUES` per chunk of rows, its SQL text built once per chunk size. `pace`, when
   * given, is asked before each statement and awaited when it yields (see `loop-pace.ts`).
   * @throws the database's error for the first row it refuses (a constraint, a value out of
   *   range: better-sqlite3 `SqliteError` / `RangeError`, pg `DatabaseError`); nothing of the
   *   call is rolled back by itself, the caller's transaction is.
   */
  insertRows<T extends AppendTable>(trx: Transaction<Database>, table: T, rows: readonly Database[T][], pace?: Pace): Promise<void>;
  /**
   * The `columns` of the rows of `shape.table` whose primary keys are `keys` (each the values of
   * `shape.key`, in order), inside `trx`: the result is aligned with `keys`, `undefined` where no
   * row has that key. SQLite (opened by `openDatabase`): one prepared statement per key;
   * otherwise one fixed `select … where (k1 = ? and …) or …` per 100 keys. `pace` as for
   * {@link StoreDialect.insertRows}.
   */
  readByKey(trx: Transaction<Database>, shape: UpsertShape, columns: readonly string[], keys: readonly (readonly unknown[])[], pace?: Pace): Promise<(Record<string, unknown> | undefined)[]>;
  /**
   * Insert each row (its values in the order `shape.key`, `shape.add`, `shape.replace`) or, when
   * a row with its key exists, add its `add` columns to that row's and replace its `replace`
   * columns (`INSERT … ON CONFLICT (key) DO UPDATE`), inside `trx`; the keys of one call must be
   * distinct. SQLite (opened by `openDatabase`): one prepared statement run per row; otherwise
   * one fixed multi-row statement per chunk (100 rows on PostgreSQL, 20 on SQLite). `pace` as
   * for {@link StoreDialect.insertRows}.
   * @throws the database's error for the first row it refuses.
   */
  upsertAdding(trx: Transaction<Database>, shape: UpsertShape, rows: readonly (readonly unknown[])[], pace?: Pace): Promise<void>;
}

/** The better-sqlite3 handle behind each SQLite Kysely `openDatabase` made, by its adapter (shared by its transactions). */
const sqliteHandles = new WeakMap<DialectAdapter, SQLite.Database>();

/**
 * Let {@link StoreDialect.insertRows} run its own prepared statements on `handle`, the one
 * better-sqlite3 connection of `db` (kysely's SqliteDialect serialises every query of `db` on it,
 * so a statement run while a transaction of `db` holds the connection is part of that
 * transaction).
 */
export function attachSqliteHandle(db: Kysely<Database>, handle: SQLite.Database): void {
  sqliteHandles.set(db.getExecutor().adapter, handle);
}

/** Each handle's insert statements, prepared on first use. */
const preparedInserts = new WeakMap<SQLite.Database, Map<AppendTable, SQLite.Statement>>();

function preparedInsert(handle: SQLite.Database, table: AppendTable): SQLite.Statement {
  let byTable = preparedInserts.get(handle);
  if (!byTable) preparedInserts.set(handle, (byTable = new Map()));
  let stmt = byTable.get(table);
  if (!stmt) {
    const cols = APPEND_COLUMNS[table];
    stmt = handle.prepare(`insert into "${table}" (${cols.map((c) => `"${c}"`).join(', ')}) values (${cols.map(() => '?').join(', ')})`);
    byTable.set(table, stmt);
  }
  return stmt;
}

/** SQL text of a multi-row insert of `n` rows into `table`, by placeholder style and `n`. */
const insertSql = new Map<string, string>();

function multiRowInsertSql(table: AppendTable, n: number, numbered: boolean): string {
  const id = `${table}|${n}|${numbered ? '$' : '?'}`;
  let text = insertSql.get(id);
  if (text === undefined) {
    const cols = APPEND_COLUMNS[table];
    const tuples: string[] = [];
    for (let r = 0; r < n; r++) tuples.push(`(${cols.map((_, c) => (numbered ? `$${r * cols.length + c + 1}` : '?')).join(', ')})`);
    text = `insert into "${table}" (${cols.map((c) => `"${c}"`).join(', ')}) values ${tuples.join(', ')}`;
    insertSql.set(id, text);
  }
  return text;
}

/** Insert `rows` through `trx`'s own executor, `chunk` rows per fixed statement. */
async function insertChunked<T extends AppendTable>(trx: Transaction<Database>, table: T, rows: readonly Database[T][], chunk: number, numbered: boolean, pace?: Pace): Promise<void> {
  const cols = APPEND_COLUMNS[table] as readonly (keyof Database[T])[];
  for (let i = 0; i < rows.length; i += chunk) {
    const turn = pace?.();
    if (turn) await turn;
    const n = Math.min(chunk, rows.length - i);
    const params: unknown[] = new Array<unknown>(n * cols.length);
    let p = 0;
    for (let r = i; r < i + n; r++) {
      const row = rows[r]!;
      for (const col of cols) params[p++] = row[col] ?? null;
    }
    await trx.executeQuery(CompiledQuery.raw(multiRowInsertSql(table, n, numbered), params));
  }
}

/** Placeholder `i` (0-based) of a statement: `$1`… for PostgreSQL, `?` for SQLite. */
const placeholder = (numbered: boolean, i: number): string => (numbered ? `$${i + 1}` : '?');
const quoted = (c: string): string => `"${c}"`;

/** SQL text of a rollup statement (`read` or `upsert`) of `n` keys or rows, built once per shape, size and placeholder style. */
const shapeSql = new Map<string, string>();

/** Everything of a shape its SQL depends on. */
const shapeId = (shape: UpsertShape): string => `${shape.table}|${shape.key.join(',')}|${shape.add.join(',')}|${shape.replace.join(',')}`;

function readSql(shape: UpsertShape, columns: readonly string[], n: number, numbered: boolean): string {
  const id = `read|${shapeId(shape)}|${columns.join(',')}|${n}|${numbered ? '$' : '?'}`;
  let text = shapeSql.get(id);
  if (text === undefined) {
    const k = shape.key.length;
    const ors: string[] = [];
    for (let r = 0; r < n; r++) ors.push(`(${shape.key.map((c, i) => `${quoted(c)} = ${placeholder(numbered, r * k + i)}`).join(' and ')})`);
    text = `select ${[...shape.key, ...columns].map(quoted).join(', ')} from ${quoted(shape.table)} where ${ors.join(' or ')}`;
    shapeSql.set(id, text);
  }
  return text;
}

function upsertSql(shape: UpsertShape, n: number, numbered: boolean): string {
  const id = `upsert|${shapeId(shape)}|${n}|${numbered ? '$' : '?'}`;
  let text = shapeSql.get(id);
  if (text === undefined) {
    const cols = [...shape.key, ...shape.add, ...shape.replace];
    const tuples: string[] = [];
    for (let r = 0; r < n; r++) tuples.push(`(${cols.map((_, i) => placeholder(numbered, r * cols.length + i)).join(', ')})`);
    const set = [...shape.add.map((c) => `${quoted(c)} = ${quoted(shape.table)}.${quoted(c)} + excluded.${quoted(c)}`), ...shape.replace.map((c) => `${quoted(c)} = excluded.${quoted(c)}`)];
    text = `insert into ${quoted(shape.table)} (${cols.map(quoted).join(', ')}) values ${tuples.join(', ')} on conflict (${shape.key.map(quoted).join(', ')}) do update set ${set.join(', ')}`;
    shapeSql.set(id, text);
  }
  return text;
}

/** A key's values as one string (length-prefixed, so no two keys share one). */
const keyString = (values: readonly unknown[]): string => values.map((v) => `${String(v).length}:${String(v)}|`).join('');

/** {@link StoreDialect.readByKey} through `trx`'s executor, 100 keys per fixed statement. */
async function readChunked(trx: Transaction<Database>, shape: UpsertShape, columns: readonly string[], keys: readonly (readonly unknown[])[], numbered: boolean, pace?: Pace): Promise<(Record<string, unknown> | undefined)[]> {
  const found = new Map<string, Record<string, unknown>>();
  for (let i = 0; i < keys.length; i += 100) {
    const p = pace?.();
    if (p) await p;
    const chunk = keys.slice(i, i + 100);
    const res = await trx.executeQuery<Record<string, unknown>>(CompiledQuery.raw(readSql(shape, columns, chunk.length, numbered), chunk.flat()));
    for (const row of res.rows) found.set(keyString(shape.key.map((c) => row[c])), row);
  }
  return keys.map((k) => found.get(keyString(k)));
}

/** {@link StoreDialect.upsertAdding} through `trx`'s executor, `chunk` rows per fixed statement. */
async function upsertChunked(trx: Transaction<Database>, shape: UpsertShape, rows: readonly (readonly unknown[])[], chunk: number, numbered: boolean, pace?: Pace): Promise<void> {
  for (let i = 0; i < rows.length; i += chunk) {
    const p = pace?.();
    if (p) await p;
    const part = rows.slice(i, i + chunk);
    await trx.executeQuery(CompiledQuery.raw(upsertSql(shape, part.length, numbered), part.flat()));
  }
}

/** Statements prepared on a handle, by SQL text (the few shapes the writer runs). */
const preparedByText = new WeakMap<SQLite.Database, Map<string, SQLite.Statement>>();

function prepared(handle: SQLite.Database, text: string): SQLite.Statement {
  let byText = preparedByText.get(handle);
  if (!byText) preparedByText.set(handle, (byText = new Map()));
  let stmt = byText.get(text);
  if (!stmt) byText.set(text, (stmt = handle.prepare(text)));
  return stmt;
}

const sqlite: StoreDialect = {
  name: 'sqlite',
  text: 'text',
  concatAgg: (column) => sql<string>`group_concat(${sql.ref(column)}, '')`,
  keyOrdered: (table) => table.modifyEnd(sql`without rowid`),
  createExpressionStatistics: async () => {},
  serializeRollupWrites: async () => {},
  async writeTransaction(db, fn) {
    return db.connection().execute(async (conn) => {
      await sql`begin immediate`.execute(conn);
      try {
        const result = await fn(conn);
        await sql`commit`.execute(conn);
        return result;
      } catch (err) {
        await sql`rollback`.execute(conn).catch(() => {});
        throw err;
      }
    });
  },
  async withMigrationLock(db, fn) {
    return db.connection().execute(async (conn) => {
      await sql`begin immediate`.execute(conn);
      try {
        const result = await fn(conn, (run) => run(conn));
        await sql`commit`.execute(conn);
        return result;
      } catch (err) {
        await sql`rollback`.execute(conn);
        throw err;
      }
    });
  },
  async explain(db, query) {
    const res = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`EXPLAIN QUERY PLAN ${query.sql}`, [...query.parameters]));
    return res.rows.map((r) => r.detail);
  },
  scansWithoutIndex: (plan, table) => plan.some((l) => new RegExp(`SCAN ${table}\\b(?!.*USING)`).test(l)),
  async insertRows(trx, table, rows, pace) {
    if (rows.length === 0) return;
    const handle = sqliteHandles.get(trx.getExecutor().adapter);
    // SQLite caps bound variables per statement; 20 rows × 32 columns stays well under.
    if (!handle) return insertChunked(trx, table, rows, 20, false, pace);
    const stmt = preparedInsert(handle, table);
    const cols = APPEND_COLUMNS[table] as readonly (keyof (typeof rows)[number])[];
    const values: unknown[] = new Array<unknown>(cols.length);
    for (const row of rows) {
      const p = pace?.();
      if (p) await p;
      for (let c = 0; c < cols.length; c++) values[c] = row[cols[c]!] ?? null;
      stmt.run(values);
    }
  },
  async readByKey(trx, shape, columns, keys, pace) {
    const handle = sqliteHandles.get(trx.getExecutor().adapter);
    if (!handle) return readChunked(trx, shape, columns, keys, false, pace);
    const stmt = prepared(handle, readSql(shape, columns, 1, false));
    const found: (Record<string, unknown> | undefined)[] = new Array<Record<string, unknown> | undefined>(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const p = pace?.();
      if (p) await p;
      found[i] = stmt.get(keys[i] as unknown[]) as Record<string, unknown> | undefined;
    }
    return found;
  },
  async upsertAdding(trx, shape, rows, pace) {
    const handle = sqliteHandles.get(trx.getExecutor().adapter);
    if (!handle) return upsertChunked(trx, shape, rows, 20, false, pace);
    const stmt = prepared(handle, upsertSql(shape, 1, false));
    for (const row of rows) {
      const p = pace?.();
      if (p) await p;
      stmt.run(row as unknown[]);
    }
  },
};

/** Lock key of the migrations: one per schema, so deployments sharing a database in different schemas do not wait for each other. */
const MIGRATION_LOCK = sql`hashtextextended('opinference:migrate:' || coalesce(current_schema(), ''), 0)`;

/** Oldest PostgreSQL the schema needs (`create statistics` on expressions came with 14). */
const MIN_POSTGRES_VERSION_NUM = 140_000;

/** Lock key of the rollup writes: one per schema, like the migrations'. */
const ROLLUP_LOCK = sql`hashtextextended('opinference:rollups:' || coalesce(current_schema(), ''), 0)`;

const postgres: StoreDialect = {
  name: 'postgres',
  text: sql`text collate "C"`,
  concatAgg: (column) => sql<string>`string_agg(${sql.ref(column)}, '')`,
  keyOrdered: (table) => table,
  async serializeRollupWrites(trx) {
    await sql`select pg_advisory_xact_lock(${ROLLUP_LOCK})`.execute(trx);
  },
  writeTransaction: (db, fn) => db.transaction().execute((trx) => fn(trx)),
  async createExpressionStatistics(db, name, table, expressions) {
    await sql`create statistics ${sql.id(name)} on ${sql.join(expressions.map((e) => sql`(${e})`))} from ${sql.table(table)}`.execute(db);
    await sql`analyze ${sql.table(table)}`.execute(db);
  },
  async withMigrationLock(db, fn) {
    return db.connection().execute(async (conn) => {
      const version = (await sql<{ v: number | string; s: string }>`select current_setting('server_version_num')::int as v, current_setting('server_version') as s`.execute(conn)).rows[0]!;
      if (Number(version.v) < MIN_POSTGRES_VERSION_NUM) throw new Error(`PostgreSQL 14 or newer is required (expression statistics); this server is ${version.s}`);
      await sql`select pg_advisory_lock(${MIGRATION_LOCK})`.execute(conn);
      try {
        return await fn(conn, (run) => conn.transaction().execute((trx) => run(trx)));
      } finally {
        await sql`select pg_advisory_unlock(${MIGRATION_LOCK})`.execute(conn);
      }
    });
  },
  async explain(db, query, options) {
    const run = async (conn: Kysely<Database>) =>
      (await conn.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`EXPLAIN ${query.sql}`, [...query.parameters]))).rows.map((r) => r['QUERY PLAN']);
    if (!options?.preferIndexes) return run(db);
    return db.transaction().execute(async (trx) => {
      await sql`set local enable_seqscan = off`.execute(trx);
      return run(trx);
    });
  },
  scansWithoutIndex: (plan, table) => plan.some((l) => new RegExp(`Seq Scan on ${table}\\b`).test(l)),
  // 100 rows × 32 columns per statement: far under PostgreSQL's 65,535 parameters.
  insertRows: (trx, table, rows, pace) => insertChunked(trx, table, rows, 100, true, pace),
  readByKey: (trx, shape, columns, keys, pace) => readChunked(trx, shape, columns, keys, true, pace),
  // 100 rows × 16 values per statement.
  upsertAdding: (trx, shape, rows, pace) => upsertChunked(trx, shape, rows, 100, true, pace),
};

/**
 * The dialect of a database (or of a transaction or connection of it), from the kysely adapter
 * `openDatabase` chose for its URL.
 */
export function sqlDialectOf(db: Kysely<Database>): StoreDialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? postgres : sqlite;
}

