/**
 * Records are never lost silently: absurd usage is clamped and flagged, one bad row never takes
 * its batch down, a database that cannot be written (SQLITE_FULL) is retried, logged with its
 * real error, counted in /metrics and turns /ready 503, and `records.durability: strict`
 * commits the record before the response completes.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteDialect, sql, type DatabaseConnection, type Driver } from 'kysely';
import type { Database } from '../../src/store/schema.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { openDatabase, type OpenDatabase } from '../../src/store/database.js';
import { sqliteOnly } from '../helpers/test-database.js';
import { migrate } from '../../src/store/migrations.js';
import { GenerationWriter } from '../../src/store/generation-writer.js';
import { MAX_USAGE_TOKENS } from '../../src/accounting/usage-bounds.js';
import { MAX_RECORD_COST_PICO } from '../../src/store/record-guard.js';
import type { GenerationsTable } from '../../src/store/schema.js';
import { until } from '../helpers/poll.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const completion = (content: string, p: number, c = 3) => ({
  json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c } },
});


function row(id: string, over: Partial<GenerationsTable> = {}): GenerationsTable {
  return {
    id, request_id: `req_${id}`, created_at: Date.now(), key_id: 'k1', requested_model: 'test/model', served_model: 'test/model', provider: 'up', endpoint: 'up/x', upstream_model: 'x',
    status: 'success', error_code: null, error_message: null, http_status: 200, finish_reason: 'stop', native_finish_reason: 'stop', api: 'chat', streamed: 0, cancelled: 0,
    prompt_tokens: 10, completion_tokens: 5, reasoning_tokens: null, cached_tokens: null, cache_write_tokens: null, usage_source: 'upstream', cost_pico: 1000n, latency_ms: 12, ttft_ms: null,
    tags: '["t"]', session: null, retention: 'none', detail: JSON.stringify({ attempts: [], warnings: [] }), content: null, ...over,
  };
}

interface Logged { level: 'error' | 'warn'; obj: Json; msg: string }
const capture = () => {
  const lines: Logged[] = [];
  return { lines, log: { error: (obj: object, msg: string) => lines.push({ level: 'error', obj: obj as Json, msg }), warn: (obj: object, msg: string) => lines.push({ level: 'warn', obj: obj as Json, msg }) } };
};

describe('record writer', () => {
  let dir: string;
  let store: OpenDatabase;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'op-records-'));
    store = openDatabase(`sqlite:${join(dir, 'w.db')}`);
    await migrate(store.db);
  });
  after(async () => {
    await store?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('one bad row never takes its batch down: 21 of 21 written, the bad ones clamped or reduced', async () => {
    const { lines, log } = capture();
    const writer = new GenerationWriter(store.db, log, 60_000, 1_000);
    let clamped = 0;
    const dropped: string[] = [];
    writer.hooks = { clamped: () => clamped++, dropped: (_n, reason) => dropped.push(reason) };
    for (let i = 0; i < 21; i++) {
      if (i === 7) writer.enqueue(row('absurd', { prompt_tokens: 1e25, cost_pico: 10n ** 25n * 150_000n }));
      else if (i === 13) writer.enqueue(row('badtags', { tags: 'not json' }));
      else writer.enqueue(row(`ok${i}`));
    }
    await writer.flush();
    const rows = await store.db.selectFrom('generations').selectAll().execute();
    assert.equal(rows.length, 21);
    assert.equal(writer.written, 21);
    assert.deepEqual(dropped, []);
    const absurd = rows.find((r) => r.id === 'absurd')!;
    assert.equal(absurd.prompt_tokens, MAX_USAGE_TOKENS);
    assert.equal(BigInt(absurd.cost_pico), MAX_RECORD_COST_PICO);
    assert.match((JSON.parse(absurd.detail) as Json).warnings[0], /^usage_clamped: prompt_tokens 1e\+25, cost_pico 1500000000000000000000000000000 /);
    assert.equal(clamped, 1);
    const bad = rows.find((r) => r.id === 'badtags')!;
    assert.equal(bad.tags, '[]');
    assert.equal(bad.prompt_tokens, null);
    assert.match((JSON.parse(bad.detail) as Json).record_error, /^SyntaxError: /);
    // The rollups count all 21 (the reduced row without usage).
    const hourly = await store.db.selectFrom('usage_hourly').select([sql<number>`SUM(requests)`.as('n'), sql<number>`SUM(prompt_tokens)`.as('p')]).executeTakeFirstOrThrow();
    assert.equal(Number(hourly.n), 21);
    assert.equal(Number(hourly.p), 19 * 10 + MAX_USAGE_TOKENS);
    assert.ok(lines.some((l) => l.level === 'error' && l.obj.generation === 'badtags' && /stored without its usage/.test(l.msg)));
  });

  test('a full database: the real error logged once, retried with backoff, /ready-style problem set, nothing lost', async () => {
    const { lines, log } = capture();
    const writer = new GenerationWriter(store.db, log, 5, 1_000);
    const failures: string[] = [];
    writer.hooks = { writeFailed: (code) => failures.push(code) };
    const pages = await sql<{ page_count: number }>`PRAGMA page_count`.execute(store.db);
    await sql.raw(`PRAGMA max_page_count = ${pages.rows[0]!.page_count}`).execute(store.db);
    const big = 'x'.repeat(64 * 1024);
    try {
      writer.enqueue(row('full1', { content: big }));
      writer.enqueue(row('full2', { content: big }));
      await until('a failed write', () => failures.length >= 2);
      assert.equal(failures[0], 'SQLITE_FULL');
      assert.match(writer.problem ?? '', /^generation records cannot be written: SQLITE_FULL: database or disk is full/);
      assert.equal(writer.queued, 2);
      assert.ok(writer.pending('full1'), 'a queued record stays visible to lookups');
      const errors = lines.filter((l) => l.level === 'error');
      assert.equal(errors.length, 1, JSON.stringify(lines));
      assert.equal(errors[0]!.obj.err.code, 'SQLITE_FULL');
      assert.ok(lines.some((l) => l.level === 'warn' && /still cannot be written/.test(l.msg)));
    } finally {
      await sql.raw('PRAGMA max_page_count = 1073741823').execute(store.db);
    }
    // The queue empties when the retried batch is taken, the problem clears once it is written.
    await until('the retry to succeed', () => writer.queued === 0 && writer.problem === null, 10_000);
    assert.equal(writer.problem, null);
    assert.ok(lines.some((l) => /can be written again/.test(l.msg)));
    const n = await store.db.selectFrom('generations').select(sql<number>`COUNT(*)`.as('n')).where('id', 'in', ['full1', 'full2']).executeTakeFirstOrThrow();
    assert.equal(Number(n.n), 2);
  });

  test('a COMMIT refused (read-only file): the real error is reported, not the ROLLBACK\'s "no transaction is active"', async () => {
    // SQLite rolls a transaction back by itself when its COMMIT fails on a read-only or immutable
    // file (or an I/O error); the driver below does what SQLite does, then fails the COMMIT.
    let refuse = true;
    class CommitRefused extends SqliteDialect {
      override createDriver(): Driver {
        const driver = super.createDriver();
        const commit = driver.commitTransaction.bind(driver);
        driver.commitTransaction = async (conn: DatabaseConnection) => {
          if (!refuse) return commit(conn);
          await conn.executeQuery(CompiledQuery.raw('rollback'));
          throw Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY' });
        };
        return driver;
      }
    }
    const db = new Kysely<Database>({ dialect: new CommitRefused({ database: new SQLite(join(dir, 'commit.db')) }) });
    await migrate(db);
    const { lines, log } = capture();
    const writer = new GenerationWriter(db, log, 5, 1_000);
    const failures: string[] = [];
    writer.hooks = { writeFailed: (code) => failures.push(code) };
    try {
      writer.enqueue(row('ro1'));
      await until('a failed write', () => failures.length >= 1);
      assert.equal(failures[0], 'SQLITE_READONLY');
      assert.equal(writer.problem, 'generation records cannot be written: SQLITE_READONLY: attempt to write a readonly database');
      assert.equal(lines.find((l) => l.level === 'error')?.obj.err.code, 'SQLITE_READONLY');
      refuse = false;
      await until('the retry to succeed', () => writer.queued === 0, 10_000);
      assert.equal(writer.problem, null);
      assert.equal((await db.selectFrom('generations').select('id').where('id', '=', 'ro1').execute()).length, 1);
    } finally {
      await writer.close();
      await db.destroy();
    }
  });

  test('strict durability: add() resolves once the row is committed, or after one failed try; no wait while writes keep failing', async () => {
    const { log } = capture();
    const writer = new GenerationWriter(store.db, log, 60_000, 1_000);
    writer.configure({ durability: 'strict' });
    const p1 = writer.add(row('strict1'));
    assert.ok(p1 instanceof Promise);
    await p1;
    assert.ok(await store.db.selectFrom('generations').select('id').where('id', '=', 'strict1').executeTakeFirst());
    const pages = await sql<{ page_count: number }>`PRAGMA page_count`.execute(store.db);
    await sql.raw(`PRAGMA max_page_count = ${pages.rows[0]!.page_count}`).execute(store.db);
    try {
      await writer.add(row('strict2', { content: 'w'.repeat(64 * 1024) }));
      assert.match(writer.problem ?? '', /SQLITE_FULL/);
      assert.equal(writer.add(row('strict3')), undefined);
    } finally {
      await sql.raw('PRAGMA max_page_count = 1073741823').execute(store.db);
    }
    await writer.close();
    assert.equal(writer.written, 3);
  });

  test('records beyond max_queued while the database fails are dropped, oldest first, counted; close() gives up after its retry time', async () => {
    const { lines, log } = capture();
    const writer = new GenerationWriter(store.db, log, 5, 1_000);
    writer.configure({ max_queued: 3 });
    const dropped: [number, string][] = [];
    writer.hooks = { dropped: (n, reason) => dropped.push([n, reason]) };
    const pages = await sql<{ page_count: number }>`PRAGMA page_count`.execute(store.db);
    await sql.raw(`PRAGMA max_page_count = ${pages.rows[0]!.page_count}`).execute(store.db);
    const big = 'y'.repeat(64 * 1024);
    try {
      for (let i = 0; i < 5; i++) writer.enqueue(row(`q${i}`, { content: big }));
      assert.deepEqual(dropped, [[1, 'queue_full'], [1, 'queue_full']]);
      assert.equal(writer.pending('q0'), undefined);
      assert.ok(writer.pending('q4'));
      const t0 = Date.now();
      await writer.close(300);
      assert.ok(Date.now() - t0 < 3_000);
      assert.deepEqual(dropped.at(-1), [3, 'shutdown']);
      assert.equal(writer.dropped, 5);
      assert.ok(lines.some((l) => /shutdown: 3 generation records could not be written/.test(l.msg)));
    } finally {
      await sql.raw('PRAGMA max_page_count = 1073741823').execute(store.db);
    }
  });
});

describe('records through the gateway', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(oneModelConfig(upstream.url, { model: { context_length: 1_000_000 }, root: { records: { flush_interval_ms: 60_000 }, retention: 30 } }));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });
  const post = (body: Json) => fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const count = async () => Number((await gw.store.db.selectFrom('generations').select(sql<number>`COUNT(*)`.as('n')).executeTakeFirstOrThrow()).n);
  const metrics = async () => (await fetch(`${gw.origin}/metrics`)).text();

  test('prompt_tokens 1e25 at a priced endpoint: 21 of 21 records written in one batch, usage clamped and flagged', async () => {
    const before = await count();
    for (let i = 0; i < 21; i++) upstream.enqueue(completion('hi', i === 10 ? 1e25 : 12));
    const answers = await Promise.all(Array.from({ length: 21 }, () => post({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }] })));
    assert.deepEqual(answers.map((a) => a.status), new Array(21).fill(200));
    const bodies = (await Promise.all(answers.map((a) => a.json()))) as Json[];
    const absurd = bodies.find((b) => b.usage.prompt_tokens !== 12)!;
    assert.equal(absurd.usage.prompt_tokens, MAX_USAGE_TOKENS);
    await gw.flush();
    assert.equal((await count()) - before, 21);
    const rec = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', absurd.id).executeTakeFirstOrThrow();
    assert.equal(rec.prompt_tokens, MAX_USAGE_TOKENS);
    assert.equal(BigInt(rec.cost_pico), BigInt(MAX_USAGE_TOKENS) * 1_000_000n + 3n * 2_000_000n);
    assert.match((JSON.parse(rec.detail) as Json).warnings.join(' '), /usage_clamped: prompt_tokens 1e\+25/);
    assert.match(await metrics(), /opinference_tokens_total\{model="test\/model",provider="up",direction="prompt"\} 10000\d{4}\n/);
  });

  test('usage clamped by one rule: the response, the record and the cost agree, every change named, counted in /metrics', async () => {
    const clampedTotal = async () => Number(/^opinference_records_clamped_total (\d+)$/m.exec(await metrics())?.[1] ?? 'NaN');
    const before = await clampedTotal();
    upstream.enqueue({
      json: {
        id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: -5, completion_tokens: 2.5, total_tokens: 0, prompt_tokens_details: { cached_tokens: 1e30 }, completion_tokens_details: { reasoning_tokens: 7 } },
      },
    });
    const res = await post({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.status, 200);
    const body = (await res.json()) as Json;
    assert.equal(body.usage.prompt_tokens, 0);
    assert.equal(body.usage.completion_tokens, 3);
    assert.equal(body.usage.prompt_tokens_details?.cached_tokens ?? 0, 0);
    assert.equal(body.usage.completion_tokens_details?.reasoning_tokens, 3);
    await gw.flush();
    const rec = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
    assert.deepEqual([rec.prompt_tokens, rec.completion_tokens, rec.cached_tokens, rec.reasoning_tokens], [0, 3, 0, 3]);
    assert.equal(BigInt(rec.cost_pico), 3n * 2_000_000n, 'no charge for cached tokens beyond the prompt');
    assert.deepEqual((JSON.parse(rec.detail) as Json).warnings.filter((w: string) => w.startsWith('usage_clamped')), [
      'usage_clamped: prompt_tokens -5 → 0, completion_tokens 2.5 → 3, cached_tokens 1e+30 → 0, reasoning_tokens 7 → 3 (each count a whole number in [0, 100000000]; cached and cache-write tokens at most prompt_tokens, reasoning_tokens at most completion_tokens)',
    ]);
    assert.equal(await clampedTotal(), before + 1);
  });

  test('SQLITE_FULL: /ready 503 with the real error, write failures counted, the record kept and written once there is room', { skip: sqliteOnly('fills the database with SQLite\'s max_page_count') }, async () => {
    gw.gateway.runtime().writer.configure({ flush_interval_ms: 5 });
    const pages = await sql<{ page_count: number }>`PRAGMA page_count`.execute(gw.store.db);
    await sql.raw(`PRAGMA max_page_count = ${pages.rows[0]!.page_count}`).execute(gw.store.db);
    let id: string;
    try {
      upstream.enqueue(completion('hi', 12));
      const res = await post({ model: 'test/model', messages: [{ role: 'user', content: 'hello '.repeat(50_000) }] });
      assert.equal(res.status, 200);
      id = ((await res.json()) as Json).id;
      await until('/ready 503', async () => (await fetch(`${gw.origin}/ready`)).status === 503);
      const ready = (await (await fetch(`${gw.origin}/ready`)).json()) as Json;
      assert.match(ready.reason, /SQLITE_FULL: database or disk is full/);
      const m = await metrics();
      assert.match(m, /opinference_record_write_failures_total\{code="SQLITE_FULL"\} [1-9]/);
      assert.match(m, /opinference_records_writable 0\n/);
      assert.match(m, /opinference_records_queued 1\n/);
      const lookup = await fetch(`${gw.baseURL}/generation?id=${id}`, { headers: { authorization: `Bearer ${gw.adminKey}` } });
      assert.equal(lookup.status, 200);
    } finally {
      await sql.raw('PRAGMA max_page_count = 1073741823').execute(gw.store.db);
    }
    await until('/ready 200', async () => (await fetch(`${gw.origin}/ready`)).status === 200, 10_000);
    const rec = await gw.store.db.selectFrom('generations').select('id').where('id', '=', id).executeTakeFirst();
    assert.equal(rec?.id, id);
    assert.equal(gw.gateway.runtime().writer.dropped, 0);
    gw.gateway.runtime().writer.configure({ flush_interval_ms: 60_000 });
  });

  test('durability strict: the row is committed before the response completes (streamed and not); batched: after', async () => {
    const inDb = async (id: string) => (await gw.store.db.selectFrom('generations').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
    const streamed = (content: string) => ({ sse: [JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: 'stop' }] })] });
    const writer = gw.gateway.runtime().writer;
    for (const durability of ['batched', 'strict'] as const) {
      writer.configure({ durability, flush_interval_ms: 60_000 });
      upstream.enqueue(completion('hi', 12));
      const plain = await post({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }] });
      const plainId = ((await plain.json()) as Json).id as string;
      upstream.enqueue(streamed('hi'));
      const stream = await post({ model: 'test/model', stream: true, messages: [{ role: 'user', content: 'hi' }] });
      const text = await stream.text();
      assert.match(text, /data: \[DONE\]\n\n$/);
      const streamId = stream.headers.get('x-op-generation-id')!;
      assert.deepEqual([await inDb(plainId), await inDb(streamId)], durability === 'strict' ? [true, true] : [false, false], durability);
    }
    writer.configure({ durability: 'batched' });
    await gw.flush();
  });
});
