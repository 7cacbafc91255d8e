import { sql, type Kysely, type Transaction } from 'kysely';
import type { BatchesTable, BatchFilesTable, BatchLinesTable, Database, GenerationsTable } from './schema.js';
import { sqlDialectOf } from './sql-dialect.js';
import { applyRollups } from './usage-rollup.js';
import { boundRow } from './record-guard.js';

/**
 * The gateway's batches in its database (SQLite or PostgreSQL, portable kysely queries): files
 * of the Files API (chunked text), batches, and their lines queued for the workers
 * (pipeline/batches/). Every read takes an owner: a key id sees its own rows only; `undefined`
 * (the admin key) sees all. Times are unix ms.
 */

/** Most characters of one stored chunk of a file: 1 MiB of text. */
export const FILE_CHUNK_CHARS = 1024 * 1024;
/** Lines inserted per statement when a batch is created. */
const LINE_INSERT_CHUNK = 200;
/** Finished lines written per statement. */
const FINISH_CHUNK = 100;

/** Who reads: a key's id (its own rows only), or undefined for the admin key (every row). */
export type Owner = string | undefined;

/** A line's progress as the batch objects count it. */
export interface LineCounts {
  total: number;
  /** Queued or running. */
  processing: number;
  succeeded: number;
  failed: number;
  canceled: number;
  expired: number;
}

/** A line handed to a worker: its batch's fields it runs with. */
export type ClaimedLine = BatchLinesTable & { endpoint: string; api: string };

/** A finished line: what its worker writes, in one transaction with its record. */
export interface LineResult {
  batchId: string;
  lineNo: number;
  statusCode: number;
  result: string;
  generationId: string | null;
  requestId: string | null;
  /** The line's generation record (absent when the line never reached the pipeline). */
  row: GenerationsTable | undefined;
}

const ownedBy = <T extends { key_id: string | null }>(row: T | undefined, owner: Owner): T | undefined => (row && (owner === undefined || row.key_id === owner) ? row : undefined);

/** Store an uploaded file: its row and its text in {@link FILE_CHUNK_CHARS} chunks, in one transaction. */
export async function insertFile(db: Kysely<Database>, file: BatchFilesTable, text: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('batch_files').values(file).execute();
    for (let seq = 0, at = 0; at < text.length || seq === 0; seq++, at += FILE_CHUNK_CHARS) {
      await trx.insertInto('batch_file_chunks').values({ file_id: file.id, seq, data: text.slice(at, at + FILE_CHUNK_CHARS) }).execute();
    }
  });
}

/** A file by id, when `owner` may see it and it has not expired. */
export async function getFile(db: Kysely<Database>, id: string, owner: Owner, now = Date.now()): Promise<BatchFilesTable | undefined> {
  const row = await db.selectFrom('batch_files').selectAll().where('id', '=', id).executeTakeFirst();
  if (row && row.expires_at !== null && Number(row.expires_at) <= now) return undefined;
  return ownedBy(row, owner);
}

/** The text of an uploaded file (its chunks joined). */
export async function fileText(db: Kysely<Database>, id: string): Promise<string> {
  const rows = await db.selectFrom('batch_file_chunks').select('data').where('file_id', '=', id).orderBy('seq').execute();
  return rows.map((r) => r.data).join('');
}

/** Files `owner` sees, newest first (`order: asc`: oldest first), after the cursor `after` (a file id), at most `limit`, optionally of one purpose. */
export async function listFiles(db: Kysely<Database>, owner: Owner, options: { purpose?: string; after?: string; limit: number; order: 'asc' | 'desc' }, now = Date.now()): Promise<BatchFilesTable[]> {
  let q = db.selectFrom('batch_files').selectAll().where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
  if (owner !== undefined) q = q.where('key_id', '=', owner);
  if (options.purpose) q = q.where('purpose', '=', options.purpose);
  if (options.after) q = q.where('id', options.order === 'desc' ? '<' : '>', options.after);
  return q.orderBy('id', options.order).limit(options.limit).execute();
}

/** Delete a file and its chunks. @returns whether `owner` had it. */
export async function deleteFile(db: Kysely<Database>, id: string, owner: Owner): Promise<boolean> {
  if (!(await getFile(db, id, owner))) return false;
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('batch_file_chunks').where('file_id', '=', id).execute();
    await trx.deleteFrom('batch_files').where('id', '=', id).execute();
  });
  return true;
}

/** Create a batch with its lines (all queued), in one transaction. */
export async function insertBatch(db: Kysely<Database>, batch: BatchesTable, lines: readonly BatchLinesTable[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('batches').values(batch).execute();
    for (let i = 0; i < lines.length; i += LINE_INSERT_CHUNK) await trx.insertInto('batch_lines').values(lines.slice(i, i + LINE_INSERT_CHUNK)).execute();
  });
}

/** A batch by id, when `owner` may see it (and it was made through `api`). */
export async function getBatch(db: Kysely<Database>, id: string, owner: Owner, api?: string): Promise<BatchesTable | undefined> {
  const row = await db.selectFrom('batches').selectAll().where('id', '=', id).executeTakeFirst();
  if (row && api !== undefined && row.api !== api) return undefined;
  return ownedBy(row, owner);
}

/** Batches of one API that `owner` sees, newest first, older than the cursor `after` (or newer than `before`), at most `limit`. */
export async function listBatches(db: Kysely<Database>, owner: Owner, api: string, options: { after?: string; before?: string; limit: number }): Promise<BatchesTable[]> {
  let q = db.selectFrom('batches').selectAll().where('api', '=', api);
  if (owner !== undefined) q = q.where('key_id', '=', owner);
  if (options.after) q = q.where('id', '<', options.after);
  if (options.before) {
    const rows = await q.where('id', '>', options.before).orderBy('id', 'asc').limit(options.limit).execute();
    return rows.reverse();
  }
  return q.orderBy('id', 'desc').limit(options.limit).execute();
}

/** How a batch's lines stand. */
export async function lineCounts(db: Kysely<Database>, batchId: string): Promise<LineCounts> {
  const rows = await db
    .selectFrom('batch_lines')
    .select(['state', sql<number>`case when status_code = 200 then 1 else 0 end`.as('ok'), sql<number | string>`count(*)`.as('n')])
    .where('batch_id', '=', batchId)
    .groupBy(['state', sql`case when status_code = 200 then 1 else 0 end`])
    .execute();
  const c: LineCounts = { total: 0, processing: 0, succeeded: 0, failed: 0, canceled: 0, expired: 0 };
  for (const r of rows) {
    const n = Number(r.n);
    c.total += n;
    if (r.state === 'queued' || r.state === 'running') c.processing += n;
    else if (r.state === 'canceled') c.canceled += n;
    else if (r.state === 'expired') c.expired += n;
    else if (Number(r.ok) === 1) c.succeeded += n;
    else c.failed += n;
  }
  return c;
}

/**
 * Claim up to `limit` lines of running batches for worker `owner` until `now + leaseMs`: queued
 * lines due (`not_before` ≤ now) and lines whose lease ran out (a worker that died), oldest
 * batch first; `accept` may turn a candidate down (a key or model at its bound) without
 * claiming it. PostgreSQL: `FOR UPDATE SKIP LOCKED`, so replicas claiming together take
 * different lines; SQLite: a `begin immediate` transaction (one writer at a time). Each claimed line's lease is taken with
 * a conditional update, so a line is held by one worker at a time.
 */
export async function claimLines(db: Kysely<Database>, owner: string, now: number, leaseMs: number, limit: number, accept: (line: ClaimedLine) => boolean): Promise<ClaimedLine[]> {
  const dialect = sqlDialectOf(db);
  const postgres = dialect.name === 'postgres';
  return dialect.writeTransaction(db, async (trx) => {
    // Two index walks (batch_lines_claim: state, batch_id, line_no): due queued lines in input
    // order, then lines whose lease ran out; finished lines are never read.
    const pick = (state: 'queued' | 'running', n: number) => {
      let q = trx
        .selectFrom('batch_lines')
        .innerJoin('batches', 'batches.id', 'batch_lines.batch_id')
        .selectAll('batch_lines')
        .select(['batches.endpoint as endpoint', 'batches.api as api'])
        .where('batches.status', '=', 'in_progress')
        .where('batch_lines.state', '=', state)
        .where(state === 'queued' ? 'batch_lines.not_before' : 'batch_lines.lease_until', state === 'queued' ? '<=' : '<', now)
        .orderBy('batch_lines.state')
        .orderBy('batch_lines.batch_id')
        .orderBy('batch_lines.line_no')
        .limit(n);
      if (postgres) q = q.forUpdate('batch_lines').skipLocked();
      return q.execute() as Promise<ClaimedLine[]>;
    };
    const stale = await pick('running', limit);
    const candidates = [...stale, ...(await pick('queued', limit * 4))];
    const chosen = new Map<string, ClaimedLine[]>();
    let n = 0;
    for (const line of candidates) {
      if (n >= limit) break;
      if (!accept(line)) continue;
      n++;
      const list = chosen.get(line.batch_id);
      if (list) list.push(line);
      else chosen.set(line.batch_id, [line]);
    }
    const claimed: ClaimedLine[] = [];
    for (const [batchId, list] of chosen) {
      // Still claimable (SQLite: another process may have claimed since the read; PostgreSQL holds the rows locked).
      const got = await trx
        .updateTable('batch_lines')
        .set({ state: 'running', lease_owner: owner, lease_until: now + leaseMs })
        .where('batch_id', '=', batchId)
        .where('line_no', 'in', list.map((l) => l.line_no))
        .where((eb) => eb.or([eb('state', '=', 'queued'), eb.and([eb('state', '=', 'running'), eb('lease_until', '<', now)])]))
        .returning('line_no')
        .execute();
      const taken = new Set(got.map((r) => Number(r.line_no)));
      for (const l of list) if (taken.has(l.line_no)) claimed.push({ ...l, state: 'running', lease_owner: owner, lease_until: now + leaseMs });
    }
    return claimed;
  });
}

/**
 * Write finished lines: each line's result and `done`, with its generation record (and the
 * record's usage rollups), in one transaction — a line is done exactly when its record is
 * written. A line no longer held by `owner` (its lease ran out and another worker took it) is
 * skipped with its record.
 * @returns the records written.
 */
export async function finishLines(db: Kysely<Database>, owner: string, results: readonly LineResult[], now = Date.now()): Promise<GenerationsTable[]> {
  return db.transaction().execute(async (trx) => {
    const rows: GenerationsTable[] = [];
    for (let i = 0; i < results.length; i += FINISH_CHUNK) {
      const part = results.slice(i, i + FINISH_CHUNK);
      // One statement per chunk (UPDATE … FROM, SQLite 3.33+ and PostgreSQL), conditional on the lease.
      const values = sql.join(part.map((r) => sql`(${r.batchId}, cast(${r.lineNo} as integer), cast(${r.statusCode} as integer), ${r.result}, ${r.generationId}, ${r.requestId})`));
      const done = await sql<{ batch_id: string; line_no: number }>`
        with v (batch_id, line_no, status_code, result, generation_id, request_id) as (values ${values})
        update batch_lines set state = 'done', status_code = v.status_code, result = v.result, generation_id = v.generation_id, request_id = v.request_id, finished_at = ${now}, lease_owner = null
        from v where batch_lines.batch_id = v.batch_id and batch_lines.line_no = v.line_no and batch_lines.state = 'running' and batch_lines.lease_owner = ${owner}
        returning batch_lines.batch_id, batch_lines.line_no`.execute(trx);
      const written = new Set(done.rows.map((d) => `${d.batch_id}|${Number(d.line_no)}`));
      for (const r of part) if (r.row && written.has(`${r.batchId}|${r.lineNo}`)) rows.push(boundRow(r.row));
    }
    if (rows.length > 0) {
      await sqlDialectOf(trx).insertRows(trx as Transaction<Database>, 'generations', rows);
      await applyRollups(trx as Transaction<Database>, rows);
    }
    return rows;
  });
}

/** Put a claimed line back in the queue, to be run again from `notBefore` (a rate-limited line), counting the retry. */
export async function requeueLine(db: Kysely<Database>, owner: string, batchId: string, lineNo: number, notBefore: number): Promise<void> {
  await db
    .updateTable('batch_lines')
    .set((eb) => ({ state: 'queued', lease_owner: null, lease_until: 0, not_before: notBefore, tries: eb('tries', '+', 1) }))
    .where('batch_id', '=', batchId)
    .where('line_no', '=', lineNo)
    .where('state', '=', 'running')
    .where('lease_owner', '=', owner)
    .execute();
}

/** Give back every line `owner` holds (a worker stopping), or those of `lines` (one batch's): queued again at once. */
export async function releaseLines(db: Kysely<Database>, owner: string, lines?: { batchId: string; lineNos: readonly number[] }): Promise<void> {
  let q = db.updateTable('batch_lines').set({ state: 'queued', lease_owner: null, lease_until: 0 }).where('state', '=', 'running').where('lease_owner', '=', owner);
  if (lines) {
    if (lines.lineNos.length === 0) return;
    q = q.where('batch_id', '=', lines.batchId).where('line_no', 'in', lines.lineNos);
  }
  await q.execute();
}

/** Set a batch's status (and its time column) when it is still in status `from`. @returns whether it changed. */
export async function moveBatch(db: Kysely<Database>, id: string, from: readonly string[], set: Partial<BatchesTable>): Promise<boolean> {
  const res = await db.updateTable('batches').set(set).where('id', '=', id).where('status', 'in', from).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Batches that are not over (a worker moves them along). */
export async function openBatches(db: Kysely<Database>): Promise<BatchesTable[]> {
  return db.selectFrom('batches').selectAll().where('status', 'in', ['validating', 'in_progress', 'finalizing', 'cancelling']).execute();
}

/** Whether a batch has lines queued or running. */
export async function hasOpenLines(db: Kysely<Database>, batchId: string, states: readonly string[] = ['queued', 'running']): Promise<boolean> {
  const row = await db.selectFrom('batch_lines').select('line_no').where('batch_id', '=', batchId).where('state', 'in', states).limit(1).executeTakeFirst();
  return row !== undefined;
}

/** Mark a batch's queued lines `state` (`canceled`, `expired`): they will not run. */
export async function closeQueuedLines(db: Kysely<Database>, batchId: string, state: 'canceled' | 'expired', now = Date.now()): Promise<void> {
  await db.updateTable('batch_lines').set({ state, finished_at: now }).where('batch_id', '=', batchId).where('state', '=', 'queued').execute();
}

/** A batch's finished lines in input order, `limit` at a time from line `from`. */
export async function finishedLines(db: Kysely<Database>, batchId: string, from: number, limit: number): Promise<BatchLinesTable[]> {
  return db.selectFrom('batch_lines').selectAll().where('batch_id', '=', batchId).where('line_no', '>=', from).where('state', 'in', ['done', 'canceled', 'expired']).orderBy('line_no').limit(limit).execute();
}

/**
 * Delete a batch's inputs and outputs (retention `none`, once its results were read): its input
 * file, its output and error files, and the text of its lines (bodies and results); the batch
 * row and the line counts stay.
 */
export async function dropBatchContent(db: Kysely<Database>, batch: BatchesTable): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const files = [batch.input_file_id, batch.output_file_id, batch.error_file_id].filter((f): f is string => f !== null);
    if (files.length > 0) {
      await trx.deleteFrom('batch_file_chunks').where('file_id', 'in', files).execute();
      await trx.deleteFrom('batch_files').where('id', 'in', files).execute();
    }
    await trx.updateTable('batch_lines').set({ body: '', result: null }).where('batch_id', '=', batch.id).execute();
    await trx.updateTable('batches').set({ results_read_at: Date.now() }).where('id', '=', batch.id).where('results_read_at', 'is', null).execute();
  });
}

/**
 * Retention `none`: the results of role `role` (`output`: lines answered 200, `error`: the
 * others) were read; delete that file and the lines' answers, and once no result file is left,
 * the input file and the line bodies too ({@link dropBatchContent}).
 */
export async function dropReadResults(db: Kysely<Database>, batch: BatchesTable, role: 'output' | 'error'): Promise<void> {
  const fileId = role === 'output' ? batch.output_file_id : batch.error_file_id;
  if (fileId) await db.deleteFrom('batch_files').where('id', '=', fileId).execute();
  let q = db.updateTable('batch_lines').set({ result: null }).where('batch_id', '=', batch.id);
  q = role === 'output' ? q.where('status_code', '=', 200) : q.where((eb) => eb.or([eb('status_code', 'is', null), eb('status_code', '<>', 200)]));
  await q.execute();
  const left = await db.selectFrom('batch_files').select('id').where('batch_id', '=', batch.id).executeTakeFirst();
  if (!left) await dropBatchContent(db, batch);
  await db.updateTable('batches').set({ results_read_at: Date.now() }).where('id', '=', batch.id).where('results_read_at', 'is', null).execute();
}

/**
 * The retention purge's part (retention-purge.ts): files past their `expires_at`, with their
 * chunks, and batches that ended before `resultsBefore` (`batches.result_retention_days`), with
 * their lines and files; at most 1,000 files and 100 batches per call.
 * @returns files and batches deleted.
 */
export async function purgeBatches(db: Kysely<Database>, now: number, resultsBefore: number): Promise<{ files: number; batches: number }> {
  const files = await db.selectFrom('batch_files').select('id').where('expires_at', '<=', now).limit(1000).execute();
  const old = await db.selectFrom('batches').selectAll().where('status', 'in', ['completed', 'failed', 'expired', 'cancelled']).where(sql<number>`coalesce(completed_at, cancelled_at, expired_at, failed_at, created_at)`, '<', resultsBefore).limit(100).execute();
  for (const b of old) {
    await dropBatchContent(db, b);
    await db.deleteFrom('batch_lines').where('batch_id', '=', b.id).execute();
    await db.deleteFrom('batches').where('id', '=', b.id).execute();
  }
  const ids = files.map((f) => f.id);
  if (ids.length > 0) {
    await db.deleteFrom('batch_file_chunks').where('file_id', 'in', ids).execute();
    await db.deleteFrom('batch_files').where('id', 'in', ids).execute();
  }
  return { files: ids.length, batches: old.length };
}
