/**
 * The batch queue in the database (store/batch-store.ts): claims by several workers at once
 * (two connections, as two replicas) never hand one line to two of them; an expired lease is
 * taken over; a line finished by a worker that lost its lease writes nothing; the retention
 * purge drops expired files and old batches. SQLite, and PostgreSQL with OP_TEST_DATABASE_URL
 * (`FOR UPDATE SKIP LOCKED`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { claimLines, finishLines, getFile, insertBatch, insertFile, lineCounts, purgeBatches, requeueLine, type ClaimedLine } from '../../src/store/batch-store.js';
import type { OpenDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import type { BatchesTable, BatchLinesTable } from '../../src/store/schema.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from '../helpers/test-database.js';

const DAY = 86_400_000;

function batch(id: string, over: Partial<BatchesTable> = {}): BatchesTable {
  return {
    id, key_id: 'k1', api: 'openai', endpoint: '/v1/chat/completions', input_file_id: null, status: 'in_progress', completion_window: '24h', metadata: null, errors: null, total: 0, retention: 'none',
    created_at: 1000, expires_at: 1000 + DAY, in_progress_at: 1000, finalizing_at: null, completed_at: null, failed_at: null, expired_at: null, cancelling_at: null, cancelled_at: null, results_read_at: null,
    output_file_id: null, error_file_id: null, ...over,
  };
}

const lines = (batchId: string, n: number): BatchLinesTable[] =>
  Array.from({ length: n }, (_, i) => ({
    batch_id: batchId, line_no: i, custom_id: `c${i}`, line_id: `batch_req_${i}`, key_id: 'k1', model: 'm', body: '{}', state: 'queued', lease_owner: null, lease_until: 0, not_before: 0, tries: 0,
    status_code: null, result: null, generation_id: null, request_id: null, finished_at: null,
  }));

describe('the batch queue', () => {
  let database: TestDatabase;
  let a: OpenDatabase;
  let b: OpenDatabase;
  before(async () => {
    database = await createTestDatabase();
    a = database.open();
    b = database.open();
    await migrate(a.db);
  });
  after(async () => {
    await a.close();
    await b.close();
    await database.drop();
  });

  test('two workers claiming at once get disjoint lines, all of them; a lost lease writes nothing; an expired one is taken over', async () => {
    await insertBatch(a.db, batch('batch_q', { total: 300 }), lines('batch_q', 300));
    const now = 10_000;
    const got: ClaimedLine[][] = [[], []];
    for (let round = 0; round < 10; round++) {
      // PostgreSQL: at once (SKIP LOCKED). SQLite: one after the other (better-sqlite3 is
      // synchronous, so two connections of one process cannot wait for each other's lock).
      const claim = (db: OpenDatabase, owner: string) => claimLines(db.db, owner, now, 60_000, 20, () => true);
      const [x, y] = TEST_DIALECT === 'postgres' ? await Promise.all([claim(a, 'wa'), claim(b, 'wb')]) : [await claim(a, 'wa'), await claim(b, 'wb')];
      got[0]!.push(...x);
      got[1]!.push(...y);
    }
    const all = [...got[0]!, ...got[1]!].map((l) => l.line_no);
    assert.equal(all.length, 300);
    assert.equal(new Set(all).size, 300);
    assert.ok(got[0]!.every((l) => l.lease_owner === 'wa' && l.lease_until === now + 60_000 && l.endpoint === '/v1/chat/completions'));
    // Nothing left to claim until the leases run out.
    assert.equal((await claimLines(a.db, 'wc', now + 1, 60_000, 50, () => true)).length, 0);
    // wc takes over wa's lines once their lease is past; wa's late results are then refused.
    const taken = await claimLines(a.db, 'wc', now + 60_001, 60_000, 500, (l) => l.lease_owner === 'wa');
    assert.equal(taken.length, got[0]!.length);
    const late = await finishLines(a.db, 'wa', taken.slice(0, 2).map((l) => ({ batchId: l.batch_id, lineNo: l.line_no, statusCode: 200, result: '{}', generationId: null, requestId: 'r', row: undefined })));
    assert.deepEqual(late, []);
    await finishLines(a.db, 'wc', taken.map((l) => ({ batchId: l.batch_id, lineNo: l.line_no, statusCode: l.line_no % 2 ? 200 : 500, result: '{}', generationId: null, requestId: 'r', row: undefined })));
    const counts = await lineCounts(a.db, 'batch_q');
    assert.equal(counts.succeeded + counts.failed, got[0]!.length);
    assert.equal(counts.processing, got[1]!.length);
    // A requeued line waits for its time.
    const one = got[1]![0]!;
    await requeueLine(a.db, 'wb', one.batch_id, one.line_no, now + 5_000);
    assert.equal((await claimLines(a.db, 'wd', now + 4_999, 1000, 10, (l) => l.line_no === one.line_no)).length, 0);
    const again = await claimLines(a.db, 'wd', now + 5_000, 1000, 10, (l) => l.line_no === one.line_no);
    assert.deepEqual(again.map((l) => [l.line_no, l.tries]), [[one.line_no, 1]]);
  });

  test('lines of a batch that is not in progress are not claimed', async () => {
    await insertBatch(a.db, batch('batch_c', { status: 'cancelling', total: 5 }), lines('batch_c', 5));
    assert.equal((await claimLines(a.db, 'w', 20_000, 1000, 50, (l) => l.batch_id === 'batch_c')).length, 0);
  });

  test('the purge: expired files and batches ended before the results cutoff go, with their lines', async () => {
    await insertFile(a.db, { id: 'file-old', key_id: 'k1', purpose: 'batch', filename: 'x.jsonl', bytes: 3, created_at: 0, expires_at: 1000, batch_id: null, role: null }, 'abc');
    await insertFile(a.db, { id: 'file-new', key_id: 'k1', purpose: 'batch', filename: 'y.jsonl', bytes: 3, created_at: 0, expires_at: 10 * DAY, batch_id: null, role: null }, 'def');
    await insertBatch(a.db, batch('batch_done', { status: 'completed', completed_at: 2000, total: 2 }), lines('batch_done', 2));
    const res = await purgeBatches(a.db, 5000, 3000);
    assert.deepEqual(res, { files: 1, batches: 1 });
    assert.equal(await getFile(a.db, 'file-old', undefined, 0), undefined);
    assert.equal((await getFile(a.db, 'file-new', 'k1', 0))?.id, 'file-new');
    assert.equal((await a.db.selectFrom('batch_lines').select('line_no').where('batch_id', '=', 'batch_done').execute()).length, 0);
    assert.equal((await a.db.selectFrom('batch_file_chunks').select('seq').where('file_id', '=', 'file-old').execute()).length, 0);
  });
});
