import { sql, type Kysely } from 'kysely';
import { migrate } from './migrations.js';
import type { Database } from './schema.js';

/**
 * Every table of the schema with its primary key, in copy order (keys first, then the records
 * and what is derived from them, then stored Responses API objects, then batch files, batches and their lines). The response cache is not
 * copied: it refills by itself. The copy pages through each table by its primary key.
 */
export const COPY_TABLES = [
  { table: 'teams', key: ['id'] },
  { table: 'api_keys', key: ['id'] },
  { table: 'generations', key: ['id'] },
  { table: 'generation_tags', key: ['generation_id', 'tag'] },
  { table: 'usage_hourly', key: ['hour', 'key_id', 'model', 'provider'] },
  { table: 'usage_hourly_tags', key: ['hour', 'key_id', 'tag', 'model', 'provider'] },
  { table: 'usage_daily', key: ['day', 'key_id', 'model', 'provider'] },
  { table: 'usage_daily_tags', key: ['day', 'key_id', 'tag', 'model', 'provider'] },
  { table: 'usage_daily_sessions', key: ['day', 'key_id', 'session'] },
  { table: 'usage_daily_session_models', key: ['day', 'key_id', 'session', 'model', 'provider'] },
  { table: 'usage_daily_session_tags', key: ['day', 'key_id', 'tag', 'session', 'model', 'provider'] },
  { table: 'stored_responses', key: ['id'] },
  { table: 'mcp_tool_calls', key: ['id'] },
  { table: 'catalog_entries', key: ['kind', 'id'] },
  { table: 'audit_log', key: ['id'] },
  { table: 'alert_webhooks', key: ['id'] },
  { table: 'alert_events', key: ['id'] },
  { table: 'alert_deliveries', key: ['id'] },
  { table: 'alert_state', key: ['subject'] },
  { table: 'batch_files', key: ['id'] },
  { table: 'batch_file_chunks', key: ['file_id', 'seq'] },
  { table: 'batches', key: ['id'] },
  { table: 'batch_lines', key: ['batch_id', 'line_no'] },
] as const satisfies readonly { table: keyof Database; key: readonly string[] }[];

type CopyTable = (typeof COPY_TABLES)[number]['table'];

/** Tables whose `cost_pico` may exceed 2^53 (sums): read as text so that no engine rounds it. */
const HAS_COST = new Set<CopyTable>(['generations', 'usage_hourly', 'usage_hourly_tags', 'usage_daily', 'usage_daily_tags']);

/** Thrown when the target already holds data and `resume` was not asked for. */
export class TargetNotEmptyError extends Error {
  constructor(readonly counts: Partial<Record<CopyTable, number>>) {
    const held = Object.entries(counts)
      .map(([t, n]) => `${n} in ${t}`)
      .join(', ');
    super(
      `the target database already holds data (${held}). Copy into an empty database, or pass --resume to continue an interrupted copy from the same source (rows present in both are overwritten with the source's)`,
    );
    this.name = 'TargetNotEmptyError';
  }
}

/** Options of {@link copyDatabase}. */
export interface CopyOptions {
  /** Rows read per page and written per transaction (default 2,000). */
  batchSize?: number;
  /** Continue into a non-empty target: rows already there are overwritten with the source's (upsert by primary key). */
  resume?: boolean;
  /** Called after each batch with the table and the rows copied from it so far. */
  onProgress?: (table: CopyTable, copied: number, total: number) => void;
}

async function countRows(db: Kysely<Database>, table: CopyTable): Promise<number> {
  const r = await db
    .selectFrom(table as 'api_keys')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * Copy a whole deployment from one database to another (SQLite to PostgreSQL, or any other
 * pair): both are first migrated to this version's schema, then every table is read page by page
 * in primary-key order (`batchSize` rows, keyset pagination) and written one transaction per page.
 * Money is read as text, so picodollar sums stay exact whatever their size. Stop the gateways
 * writing to the source first: rows written during the copy may be missed.
 * @returns the rows copied per table (equal to the source's counts when nothing wrote meanwhile).
 * @throws TargetNotEmptyError when the target holds rows and `resume` is not set.
 */
export async function copyDatabase(from: Kysely<Database>, to: Kysely<Database>, options: CopyOptions = {}): Promise<Record<CopyTable, number>> {
  const batchSize = options.batchSize ?? 2_000;
  await migrate(from);
  await migrate(to);
  if (!options.resume) {
    const held: Partial<Record<CopyTable, number>> = {};
    for (const { table } of COPY_TABLES) {
      const n = await countRows(to, table);
      if (n > 0) held[table] = n;
    }
    if (Object.keys(held).length > 0) throw new TargetNotEmptyError(held);
  }
  const copied = {} as Record<CopyTable, number>;
  for (const { table, key } of COPY_TABLES) {
    const total = await countRows(from, table);
    copied[table] = 0;
    let after: unknown[] | null = null;
    for (;;) {
      let page = from.selectFrom(table as 'generations').selectAll();
      if (HAS_COST.has(table)) page = page.select(sql<string>`cast(cost_pico as text)`.as('cost_pico'));
      // Keyset pagination: (k1, k2, …) > (last page's), a row-value comparison both engines answer from the primary key.
      if (after) page = page.where(sql<boolean>`(${sql.join(key.map((c) => sql.ref(c)))}) > (${sql.join(after)})`);
      for (const col of key) page = page.orderBy(sql.ref(col));
      const rows = (await page.limit(batchSize).execute()) as Record<string, unknown>[];
      if (rows.length === 0) break;
      await to.transaction().execute(async (trx) => {
        // 500 rows × 35 columns stays under both engines' bound-parameter limits.
        for (let i = 0; i < rows.length; i += 500) {
          const chunk = rows.slice(i, i + 500);
          const columns = Object.keys(chunk[0]!);
          await trx
            .insertInto(table)
            .values(chunk as never)
            .onConflict((oc) => {
              const target = oc.columns(key as never);
              if (!options.resume) return target.doNothing();
              return target.doUpdateSet(Object.fromEntries(columns.filter((c) => !(key as readonly string[]).includes(c)).map((c) => [c, sql.ref(`excluded.${c}`)])) as never);
            })
            .execute();
        }
      });
      copied[table] += rows.length;
      options.onProgress?.(table, copied[table], total);
      const lastRow = rows[rows.length - 1]!;
      after = key.map((c) => lastRow[c]);
      if (rows.length < batchSize) break;
    }
  }
  // The catalog's revision goes along (the target's row exists from its migration): the stored
  // entries are in force at that revision, and later changes count on from it.
  const revision = await from.selectFrom('catalog_revision').select('revision').where('id', '=', 1).executeTakeFirst();
  if (revision) await to.updateTable('catalog_revision').set({ revision: Number(revision.revision) }).where('id', '=', 1).execute();
  return copied;
}
