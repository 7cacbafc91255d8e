import { CompiledQuery, PostgresAdapter, sql, type ColumnDataType, type CreateTableBuilder, type Expression, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from './schema.js';

/** A column type for kysely's schema builder (a name or raw SQL). */
export type DataTypeExpression = ColumnDataType | Expression<unknown>;

/** The database engines the store runs on. */
export type DialectName = 'sqlite' | 'postgres';

/**
 * The SQL that differs between SQLite and PostgreSQL, in one place. Every query of the store is
 * written once with kysely; where the two engines spell something differently, the query asks
 * the dialect of its database ({@link dialectOf}) for the fragment. Times are unix ms in `bigint`
 * columns on both engines (the usage and search queries do integer arithmetic on them), money is
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
}

const sqlite: StoreDialect = {
  name: 'sqlite',
  text: 'text',
  concatAgg: (column) => sql<string>`group_concat(${sql.ref(column)}, '')`,
  keyOrdered: (table) => table.modifyEnd(sql`without rowid`),
  createExpressionStatistics: async () => {},
  serializeRollupWrites: async () => {},
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
};

/**
 * The dialect of a database (or of a transaction or connection of it), from the kysely adapter
 * `openDatabase` chose for its URL.
 */
export function dialectOf(db: Kysely<Database>): StoreDialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? postgres : sqlite;
}

