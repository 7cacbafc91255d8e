/**
 * The record writer's statements (the dialect's `insertRows`, `readByKey`, `upsertAdding`): on
 * SQLite they run better-sqlite3 statements of their own on the handle `openDatabase` opened, so
 * these tests check that they are part of kysely's transaction (a rollback takes them back),
 * that every column arrives as given (exact 64-bit costs, nulls, non-ASCII text), and that a
 * SQLite Kysely the dialect holds no handle for still works (the fixed multi-row SQL). Runs on
 * PostgreSQL with OP_TEST_DATABASE_URL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import type { OpenDatabase } from '../../src/store/database.js';
import { sqlDialectOf, type UpsertShape } from '../../src/store/sql-dialect.js';
import { GenerationWriter } from '../../src/store/generation-writer.js';
import { migrate } from '../../src/store/migrations.js';
import { GENERATION_COLUMNS, LATENCY_BUCKETS_MS, type Database, type GenerationsTable } from '../../src/store/schema.js';
import { latencyBucket } from '../../src/store/usage-rollup.js';
import { newGenerationId, timePrefix } from '../../src/util/ids.js';
import { createTestDatabase, sqliteOnly, type TestDatabase } from '../helpers/test-database.js';

function row(id: string, over: Partial<GenerationsTable> = {}): GenerationsTable {
  return {
    id, request_id: `req_${id}`, created_at: 1_765_000_000_123, key_id: 'k1', requested_model: 'test/model', served_model: 'test/modèle', provider: 'up', endpoint: 'up/x', upstream_model: 'x',
    status: 'success', error_code: null, error_message: 'ошибка', http_status: 200, finish_reason: 'stop', native_finish_reason: 'end_turn', api: 'chat', streamed: 1, cancelled: 0,
    prompt_tokens: 10, completion_tokens: 5, reasoning_tokens: null, cached_tokens: 0, cache_write_tokens: null, usage_source: 'upstream', cost_pico: 9_007_199_254_740_993n, latency_ms: 12, ttft_ms: 3,
    tags: '["t"]', session: 's1', end_user: 'u1', batch_id: 'batch_1', custom_id: 'c-1', retention: '30', detail: '{"attempts":[]}', content: '{"request":"日本"}', ...over,
  };
}

/** A generation read back with its cost as exact text. */
async function readBack(db: Kysely<Database>, id: string): Promise<Record<string, unknown> | undefined> {
  const r = await db.selectFrom('generations').selectAll().select(sql<string>`cast(cost_pico as text)`.as('cost_text')).where('id', '=', id).executeTakeFirst();
  if (!r) return undefined;
  const { cost_text, ...rest } = r;
  return { ...rest, created_at: Number(rest.created_at), cost_pico: BigInt(cost_text) };
}

describe('record writer statements', () => {
  let tdb: TestDatabase;
  let store: OpenDatabase;
  before(async () => {
    tdb = await createTestDatabase('inserts.db');
    store = tdb.open();
    await migrate(store.db);
  });
  after(async () => {
    await store?.close();
    await tdb?.drop();
  });

  test('insertRows: every column as given, inside kysely\'s transaction (a rollback takes the rows back)', async () => {
    const dialect = sqlDialectOf(store.db);
    const kept = row('gen_kept');
    const trx = await store.db.startTransaction().execute();
    await dialect.insertRows(trx, 'generations', [row('gen_rolled_back')]);
    await dialect.insertRows(trx, 'generation_tags', [{ generation_id: 'gen_rolled_back', tag: 't', created_at: 1, key_id: null }]);
    await trx.rollback().execute();
    assert.equal(await readBack(store.db, 'gen_rolled_back'), undefined);
    assert.equal((await store.db.selectFrom('generation_tags').select('tag').where('generation_id', '=', 'gen_rolled_back').execute()).length, 0);

    const trx2 = await store.db.startTransaction().execute();
    await dialect.insertRows(trx2, 'generations', [kept, row('gen_nulls', { key_id: null, served_model: null, prompt_tokens: null, ttft_ms: null, content: null, cost_pico: 0 })]);
    await trx2.commit().execute();
    assert.deepEqual(await readBack(store.db, 'gen_kept'), { ...kept });
    const nulls = await readBack(store.db, 'gen_nulls');
    assert.deepEqual([nulls?.key_id, nulls?.served_model, nulls?.prompt_tokens, nulls?.ttft_ms, nulls?.content, nulls?.cost_pico], [null, null, null, null, null, 0n]);
    assert.equal(GENERATION_COLUMNS.length, 35);
  });

  test('insertRows: a refused row throws the database\'s error (duplicate id) and the transaction can be rolled back', async () => {
    const trx = await store.db.startTransaction().execute();
    await assert.rejects(sqlDialectOf(store.db).insertRows(trx, 'generations', [row('gen_dup'), row('gen_dup')]), (err: { code?: string }) => /^(SQLITE_CONSTRAINT|23505)/.test(String(err.code)));
    await trx.rollback().execute();
    assert.equal(await readBack(store.db, 'gen_dup'), undefined);
  });

  test('readByKey and upsertAdding: found rows aligned with the keys (undefined when missing), sums added, other columns replaced', async () => {
    const dialect = sqlDialectOf(store.db);
    const shape: UpsertShape = { table: 'usage_daily_sessions', key: ['day', 'key_id', 'session'], add: ['requests'], replace: [] };
    const hourly: UpsertShape = { table: 'usage_hourly', key: ['hour', 'key_id', 'model', 'provider'], add: ['requests', 'cost_pico'], replace: ['latency_hist', 'ttft_hist'] };
    await store.db.transaction().execute(async (trx) => {
      await dialect.upsertAdding(trx, shape, [[86_400_000, 'k', 's1', 2], [86_400_000, 'k', 's2', 5]]);
      await dialect.upsertAdding(trx, shape, [[86_400_000, 'k', 's1', 3]]);
      await dialect.upsertAdding(trx, hourly, [[3_600_000, 'k', 'm', 'p', 1, 9_007_199_254_740_993n, '[1]', '[2]']]);
      await dialect.upsertAdding(trx, hourly, [[3_600_000, 'k', 'm', 'p', 2, 7n, '[3]', '[4]']]);
      const read = await dialect.readByKey(trx, hourly, ['latency_hist', 'ttft_hist'], [[3_600_000, 'k', 'm', 'x'], [3_600_000, 'k', 'm', 'p']]);
      assert.equal(read.length, 2);
      assert.equal(read[0], undefined);
      assert.deepEqual([read[1]?.latency_hist, read[1]?.ttft_hist], ['[3]', '[4]']);
    });
    const sessions = await store.db.selectFrom('usage_daily_sessions').select(['session', 'requests']).orderBy('session').execute();
    assert.deepEqual(sessions.map((s) => [s.session, Number(s.requests)]), [['s1', 5], ['s2', 5]]);
    const h = await store.db.selectFrom('usage_hourly').select([sql<string>`cast(cost_pico as text)`.as('cost'), 'requests']).executeTakeFirstOrThrow();
    assert.deepEqual([h.cost, Number(h.requests)], ['9007199254741000', 3]);
  });

  test('the writer: 250 rows with tags, sessions and duplicate tags give the exact rollups and tag rows', async () => {
    const writer = new GenerationWriter(store.db, { error: () => {}, warn: () => {} }, 60_000, 1_000);
    const day = Date.UTC(2026, 0, 5);
    for (let i = 0; i < 250; i++) {
      writer.enqueue(row(`gen_w${i}`, { created_at: day + i * 60_000, key_id: 'kw', tags: i % 5 === 0 ? '["a","a","b"]' : i % 5 === 1 ? 'null' : '[]', session: i % 2 === 0 ? 'sw' : null, cost_pico: 3n, latency_ms: i * 10 }));
    }
    await writer.flush();
    assert.equal(writer.written, 250);
    const tags = await store.db.selectFrom('generation_tags').select(['tag', sql<number>`count(*)`.as('n')]).where('key_id', '=', 'kw').groupBy('tag').orderBy('tag').execute();
    assert.deepEqual(tags.map((t) => [t.tag, Number(t.n)]), [['a', 50], ['b', 50]]);
    const daily = await store.db.selectFrom('usage_daily').select(['requests', 'prompt_tokens', sql<string>`cast(cost_pico as text)`.as('cost'), 'latency_hist']).where('key_id', '=', 'kw').executeTakeFirstOrThrow();
    assert.equal(Number(daily.requests), 250);
    assert.equal(daily.cost, '750');
    // Tags of JSON null count no tag, as before; no row was reduced (all 250 keep their usage).
    assert.equal(Number(daily.prompt_tokens), 2500);
    const expected = new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);
    for (let i = 0; i < 250; i++) expected[latencyBucket(i * 10)]!++;
    assert.deepEqual(JSON.parse(daily.latency_hist), expected);
    const session = await store.db.selectFrom('usage_daily_session_tags').select(['tag', 'requests']).where('key_id', '=', 'kw').orderBy('tag').execute();
    assert.deepEqual(session.map((s) => [s.tag, Number(s.requests)]), [['a', 25], ['b', 25]]);
  });

  test('a SQLite Kysely made without openDatabase: the fixed multi-row statements, 45 rows in three chunks', { skip: sqliteOnly('a Kysely over its own better-sqlite3 handle') }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'op-inserts-'));
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: new SQLite(join(dir, 'plain.db')) }) });
    try {
      await migrate(db);
      const writer = new GenerationWriter(db, { error: () => {}, warn: () => {} }, 60_000, 1_000);
      const ids = Array.from({ length: 45 }, () => newGenerationId());
      for (const id of ids) writer.enqueue(row(id, { session: null }));
      await writer.flush();
      assert.equal(writer.written, 45);
      assert.deepEqual(await readBack(db, ids[44]!), { ...row(ids[44]!, { session: null }) });
      const hourly = await db.selectFrom('usage_hourly').select(['requests']).executeTakeFirstOrThrow();
      assert.equal(Number(hourly.requests), 45);
      assert.equal((await db.selectFrom('generation_tags').select('tag').execute()).length, 45);
    } finally {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('latencyBucket: a duration at a bound falls in that bound\'s bucket, beyond the last in the open one', () => {
    assert.deepEqual([latencyBucket(0), latencyBucket(10), latencyBucket(10.5), latencyBucket(120_000), latencyBucket(120_001), latencyBucket(Number.NaN)], [0, 0, 1, 19, 20, 20]);
  });

  test('generation ids: gen_ and 24 base62 characters, the first 8 the time, so later ids sort after earlier ones as text', async () => {
    const a = newGenerationId();
    await new Promise((r) => setTimeout(r, 3));
    const b = newGenerationId();
    assert.match(a, /^gen_[0-9A-Za-z]{24}$/);
    assert.match(b, /^gen_[0-9A-Za-z]{24}$/);
    assert.ok(a < b, `${a} < ${b}`);
    assert.notEqual(newGenerationId(), newGenerationId());
    assert.deepEqual([timePrefix(0), timePrefix(61), timePrefix(62), timePrefix(1_765_000_000_000)], ['00000000', '0000000z', '00000010', '0V4Zk7zU']);
    const times = [0, 9, 10, 35, 36, 61, 62, 3_843, 1_000_000_000_000, 1_765_000_000_000, 62 ** 8 - 1];
    const sorted = times.map(timePrefix);
    assert.deepEqual([...sorted].sort(), sorted);
  });
});
