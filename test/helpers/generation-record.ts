import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { TestGateway } from './gateway.js';

/** A generation record as tests read it: the `generations` row, with `detail` parsed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type GenerationRecord = Record<string, any> & { detail: Record<string, any> };

const parsed = (row: Record<string, unknown>): GenerationRecord => ({ ...row, detail: JSON.parse(String(row.detail)) as Record<string, unknown> });

/**
 * The record written last (queued records flushed first): the row inserted last, by SQLite's
 * `rowid` or PostgreSQL's `ctid` (the table only grows in a test), not by `created_at`, which
 * two records of the same millisecond share.
 */
export async function lastGeneration(gw: TestGateway): Promise<GenerationRecord> {
  await gw.flush();
  const row = await gw.store.db
    .selectFrom('generations')
    .selectAll()
    .orderBy(gw.store.dialect === 'postgres' ? sql`ctid` : sql`rowid`, 'desc')
    .executeTakeFirstOrThrow();
  return parsed(row as unknown as Record<string, unknown>);
}

/** The record of one generation by its id (`x-op-generation-id`), queued records flushed first. */
export async function generationRecord(gw: TestGateway, id: string | null): Promise<GenerationRecord> {
  assert.ok(id, 'the response names its generation');
  await gw.flush();
  const row = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  return parsed(row as unknown as Record<string, unknown>);
}
