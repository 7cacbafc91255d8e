import type { Kysely } from 'kysely';
import { inTransaction } from './database.js';
import type { Database } from './schema.js';

/** Which list of the config an entry belongs to: `providers` or `models`. */
export type CatalogEntryKind = 'provider' | 'model';

/** One provider or model entered through the catalog API, in the config file's shape (secrets sealed). */
export interface StoredCatalogEntry {
  kind: CatalogEntryKind;
  id: string;
  /** The entry as the config file would hold it (`providers[i]` / `models[i]`); secrets sealed. */
  entry: Record<string, unknown>;
  /** Unix ms. */
  createdAt: number;
  updatedAt: number;
  updatedBy: string | null;
}

/** The database's catalog entries and the revision they are at (every change adds 1). */
export interface CatalogSnapshot {
  revision: number;
  entries: StoredCatalogEntry[];
}

/** The catalog's revision: 0 before the first change; one query, for the replicas' 1 s check. */
export async function catalogRevision(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom('catalog_revision').select('revision').where('id', '=', 1).executeTakeFirst();
  return Number(row?.revision ?? 0);
}

/** Every stored entry (providers, then models, each in the order they were first created) at one revision. */
export async function loadCatalogSnapshot(db: Kysely<Database>): Promise<CatalogSnapshot> {
  return db.transaction().execute(async (trx) => {
    const revision = await catalogRevision(trx);
    const rows = await trx.selectFrom('catalog_entries').selectAll().orderBy('kind', 'desc').orderBy('created_at').orderBy('id').execute();
    return {
      revision,
      entries: rows.map((r) => ({ kind: r.kind, id: r.id, entry: JSON.parse(r.entry) as Record<string, unknown>, createdAt: Number(r.created_at), updatedAt: Number(r.updated_at), updatedBy: r.updated_by })),
    };
  });
}

/** A change to the stored catalog: an entry put (created or replaced) or removed. */
export type CatalogChange = { op: 'put'; kind: CatalogEntryKind; id: string; entry: Record<string, unknown> } | { op: 'delete'; kind: CatalogEntryKind; id: string };

/**
 * Apply `change` if the catalog is still at `expectedRevision` (optimistic concurrency: two
 * replicas validating against the same revision cannot both write), in one transaction with
 * the revision's increment (`db` may be a transaction already: then in that one).
 * @returns the new revision, or `'conflict'` when another change came first (re-read, re-validate, retry).
 */
export async function writeCatalogChange(db: Kysely<Database>, change: CatalogChange, expectedRevision: number, actor: string | null, now = Date.now()): Promise<number | 'conflict'> {
  // In a transaction of the caller's (the audit row's, store/audit-log.ts `audited`) or one of its own.
  const run = async (trx: Kysely<Database>): Promise<number | 'conflict'> => {
    const bumped = await trx
      .updateTable('catalog_revision')
      .set({ revision: expectedRevision + 1 })
      .where('id', '=', 1)
      .where('revision', '=', expectedRevision)
      .executeTakeFirst();
    if (Number(bumped.numUpdatedRows) !== 1) return 'conflict';
    if (change.op === 'delete') {
      await trx.deleteFrom('catalog_entries').where('kind', '=', change.kind).where('id', '=', change.id).execute();
    } else {
      const entry = JSON.stringify(change.entry);
      const updated = await trx.updateTable('catalog_entries').set({ entry, updated_at: now, updated_by: actor }).where('kind', '=', change.kind).where('id', '=', change.id).executeTakeFirst();
      if (Number(updated.numUpdatedRows) === 0) await trx.insertInto('catalog_entries').values({ kind: change.kind, id: change.id, entry, created_at: now, updated_at: now, updated_by: actor }).execute();
    }
    return expectedRevision + 1;
  };
  return inTransaction(db, run);
}
