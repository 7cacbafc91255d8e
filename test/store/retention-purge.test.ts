/** Retention purge: stored text past its retention is removed, nothing else is touched. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql } from 'kysely';
import type { OpenDatabase } from '../../src/store/database.js';
import { sqlDialectOf } from '../../src/store/sql-dialect.js';
import { GenerationWriter } from '../../src/store/generation-writer.js';
import { migrate } from '../../src/store/migrations.js';
import { purgeExpiredContent, startRetentionPurge } from '../../src/store/retention-purge.js';
import type { GenerationsTable } from '../../src/store/schema.js';
import { purgeExpiredResponses, StoredResponseStore } from '../../src/store/stored-responses.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function row(id: string, createdAt: number, retention: string, text: { content?: string | null; error?: string | null } = {}): GenerationsTable {
  return {
    id, request_id: `req_${id}`, created_at: createdAt, key_id: 'key_1', requested_model: 'm', served_model: 'm', provider: 'p', endpoint: 'p/m', upstream_model: 'm',
    status: text.error ? 'error' : 'success', error_code: text.error ? 'upstream_error' : null, error_message: text.error ?? null, http_status: text.error ? 502 : 200,
    finish_reason: 'stop', native_finish_reason: 'stop', api: 'chat', streamed: 0, cancelled: 0, prompt_tokens: 3, completion_tokens: 2, reasoning_tokens: null,
    cached_tokens: null, cache_write_tokens: null, usage_source: 'upstream', cost_pico: 7n, latency_ms: 12, ttft_ms: 5, tags: '[]', session: null, retention,
    detail: JSON.stringify({ attempts: [], routing_reason: null, dropped_parameters: [], warnings: [] }),
    content: text.content === undefined ? (retention === 'none' ? null : JSON.stringify({ request: { messages: [{ role: 'user', content: `text of ${id}` }] }, output: { content: 'x' } })) : text.content,
  };
}

describe('purgeExpiredContent', () => {
  let database: TestDatabase;
  let store: OpenDatabase;
  const NOW = Date.UTC(2025, 5, 15, 12, 0, 0);

  before(async () => {
    database = await createTestDatabase('purge.db');
    store = database.open();
    await migrate(store.db);
    const writer = new GenerationWriter(store.db, { error: (o, m) => assert.fail(`${m} ${JSON.stringify(o)}`) });
    for (const r of [
      row('old_1d', NOW - 2 * DAY, '1'), // past 1 day: purged
      row('edge_1d', NOW - DAY, '1'), // exactly 1 day old: not yet past
      row('young_1d', NOW - HOUR, '1'), // kept
      row('old_30d', NOW - 2 * DAY, '30'), // kept
      row('ancient_30d', NOW - 31 * DAY, '30'), // purged
      row('zero', NOW - 1000, '0'), // retention 0 days: purged at once
      row('none_old', NOW - 400 * DAY, 'none'), // never had text
      row('error_1d', NOW - 3 * DAY, '1', { content: null, error: 'upstream said: text of error_1d' }), // error text purged too
      row('error_none', NOW - 3 * DAY, 'none', { content: null, error: null }),
      row('old_7d', NOW - 8 * DAY, '7'), // purged
      row('fresh_7d', NOW - 6 * DAY, '7'), // kept
    ]) {
      writer.enqueue(r);
    }
    await writer.flush();
  });
  after(async () => {
    await store?.close();
    await database?.drop();
  });

  const state = async () => {
    const rows = await store.db.selectFrom('generations').select(['id', 'content', 'error_message', 'prompt_tokens', 'cost_pico', 'retention']).orderBy('id').execute();
    return Object.fromEntries(rows.map((r) => [r.id, { content: r.content !== null, error: r.error_message !== null }]));
  };

  test('clears exactly the text past its retention and returns how many rows', async () => {
    assert.equal(await purgeExpiredContent(store.db, NOW), 5);
    assert.deepEqual(await state(), {
      ancient_30d: { content: false, error: false },
      edge_1d: { content: true, error: false },
      error_1d: { content: false, error: false },
      error_none: { content: false, error: false },
      fresh_7d: { content: true, error: false },
      none_old: { content: false, error: false },
      old_1d: { content: false, error: false },
      old_30d: { content: true, error: false },
      old_7d: { content: false, error: false },
      young_1d: { content: true, error: false },
      zero: { content: false, error: false },
    });
    // Metadata stays.
    const kept = await store.db.selectFrom('generations').selectAll().where('id', '=', 'old_1d').executeTakeFirstOrThrow();
    assert.equal(kept.prompt_tokens, 3);
    assert.equal(Number(kept.cost_pico), 7);
    assert.equal(kept.retention, '1');
    // Nothing left to do; a day later the 1-day edge row goes too.
    assert.equal(await purgeExpiredContent(store.db, NOW), 0);
    assert.equal(await purgeExpiredContent(store.db, NOW + 1), 1);
    assert.equal((await state()).edge_1d!.content, false);
  });

  test('large backlogs go in batches', async () => {
    const writer = new GenerationWriter(store.db, { error: () => assert.fail('write failed') }, 50, 10_000);
    for (let i = 0; i < 4_500; i++) writer.enqueue(row(`bulk_${String(i).padStart(5, '0')}`, NOW - 10 * DAY - i, '3'));
    await writer.flush();
    assert.equal(await purgeExpiredContent(store.db, NOW), 4_500);
    const left = await store.db.selectFrom('generations').select((eb) => eb.fn.countAll<number>().as('n')).where('content', 'is not', null).executeTakeFirstOrThrow();
    assert.equal(Number(left.n), 3); // young_1d, old_30d, fresh_7d
  });

  test('it reads the partial index of rows still holding text, not the table', async () => {
    const dialect = sqlDialectOf(store.db);
    const plan = (q: string, params: unknown[]) => dialect.explain(store.db, CompiledQuery.raw(q, params), { preferIndexes: true });
    const update = store.db
      .updateTable('generations')
      .set({ content: null, error_message: null })
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('generations')
          .select('id')
          .where(sql<boolean>`(${sql.ref('content')} is not null or ${sql.ref('error_message')} is not null)`)
          .where('retention', '=', '7')
          .where('created_at', '<', NOW)
          .limit(10),
      )
      .compile();
    const lines = await plan(update.sql, [...update.parameters]);
    // SQLite: `USING [COVERING] INDEX generations_retained`; PostgreSQL: `Index [Only] Scan using generations_retained` or `Bitmap Index Scan on generations_retained`.
    const usesIndex = (l: string) => /USING (COVERING )?INDEX generations_retained|Scan (using|on) generations_retained/.test(l);
    assert.ok(lines.some(usesIndex), lines.join(' | '));
    assert.ok(!dialect.scansWithoutIndex(lines, 'generations'), lines.join(' | '));
    const distinct = await plan(`select distinct "retention" from "generations" where "content" is not null or "error_message" is not null`, []);
    assert.ok(distinct.some(usesIndex), distinct.join(' | '));
  });
});

describe('startRetentionPurge', () => {
  test('purges at start, logs the count, stops; a failing database is logged, never thrown', async () => {
    const database = await createTestDatabase('purge.db');
    const store = database.open();
    try {
      await migrate(store.db);
      const writer = new GenerationWriter(store.db, { error: () => assert.fail('write failed') });
      writer.enqueue(row('a', Date.now() - 3 * DAY, '1'));
      writer.enqueue(row('b', Date.now() - 3 * DAY, '5'));
      await writer.flush();
      const infos: Json[] = [];
      const errors: Json[] = [];
      const log = { info: (o: object) => infos.push(o), error: (o: object) => errors.push(o) };
      const stop = startRetentionPurge(store.db, log, 60_000);
      for (let i = 0; i < 100 && infos.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      stop();
      assert.equal(infos.length, 1);
      assert.equal(infos[0]!.purged, 1);
      assert.deepEqual(errors, []);
      const a = await store.db.selectFrom('generations').select(['id', 'content']).orderBy('id').execute();
      assert.deepEqual(a.map((r) => [r.id, r.content !== null]), [
        ['a', false],
        ['b', true],
      ]);
    } finally {
      await store.close();
    }
    // A closed database: the error is logged, nothing throws (no unhandled rejection).
    const broken = database.open();
    await broken.close();
    const errors: Json[] = [];
    const stop = startRetentionPurge(broken.db, { info: () => assert.fail('no count expected'), error: (o: object) => errors.push(o) }, 5);
    for (let i = 0; i < 100 && errors.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    stop();
    assert.ok(errors.length >= 2, 'the start run and a timer run each logged their failure');
    assert.ok(errors[0]!.err instanceof Error);
    await database.drop();
  });
});

describe('retention end to end', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(oneModelConfig(upstream.url));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  test('text kept through the gateway with op.retention disappears once it is past', async () => {
    const key = await gw.createKey('retained');
    const realNow = Date.now.bind(Date);
    const send = async (startedAt: number, retention: number | 'none') => {
      upstream.enqueue({ json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'answer' }, finish_reason: 'stop' }], usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 } } });
      const start = realNow();
      Date.now = () => startedAt + (realNow() - start);
      try {
        const res = await fetch(`${gw.baseURL}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: `kept ${retention}` }], op: { retention } }),
        });
        assert.equal(res.status, 200);
        return ((await res.json()) as Json).id as string;
      } finally {
        Date.now = realNow;
      }
    };
    const threeDaysAgo = realNow() - 3 * DAY;
    const expired = await send(threeDaysAgo, 2);
    const kept = await send(threeDaysAgo, 5);
    const none = await send(threeDaysAgo, 'none');
    await gw.flush();
    const content = async (id: string) => (await gw.store.db.selectFrom('generations').select('content').where('id', '=', id).executeTakeFirstOrThrow()).content;
    assert.match((await content(expired))!, /kept 2/);
    assert.match((await content(kept))!, /kept 5/);
    assert.equal(await content(none), null);
    assert.equal(await purgeExpiredContent(gw.store.db), 1);
    assert.equal(await content(expired), null);
    assert.match((await content(kept))!, /kept 5/);
    // The generation's page shows no text any more, the record itself is still there.
    const page = (await (await fetch(`${gw.baseURL}/generation?id=${expired}`, { headers: { authorization: `Bearer ${key.secret}` } })).json()) as Json;
    assert.equal(page.data.content, null);
    assert.equal(page.data.retention, 2);
    assert.equal(page.data.tokens_prompt, 2);
  });
});

describe('stored responses (Responses API store) and the retention purge', () => {
  test('expired stored responses are deleted by the purge and read as absent before it', async () => {
    const database = await createTestDatabase('purge.db');
    const store = database.open();
    try {
      await migrate(store.db);
      const responses = new StoredResponseStore(store.db);
      const now = Date.now();
      const body = (id: string) => ({ response: { id, object: 'response', output: [] }, input: [] });
      await responses.save('gen_old', 'key_1', now - 3 * DAY, 1, body('gen_old'));
      await responses.save('gen_young', 'key_1', now - 3 * DAY, 5, body('gen_young'));
      await responses.save('gen_admin', null, now - HOUR, 1, body('gen_admin'));
      await responses.save('gen_none', 'key_1', now, 'none', body('gen_none'));
      assert.equal(await responses.get('gen_old', 'key_1', now), undefined, 'past its retention: absent even before the purge');
      assert.equal((await responses.get('gen_young', 'key_1', now))?.response.id, 'gen_young');
      assert.equal(await responses.get('gen_young', 'key_2', now), undefined, 'another key');
      assert.equal(await responses.get('gen_young', null, now), undefined, 'the admin key is another owner');
      assert.equal((await responses.get('gen_admin', null, now))?.response.id, 'gen_admin');

      const infos: Json[] = [];
      const stop = startRetentionPurge(store.db, { info: (o: object) => infos.push(o), error: () => assert.fail('purge failed') }, 60_000);
      for (let i = 0; i < 100 && infos.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      stop();
      assert.equal((infos[0] as Json).responses, 1);
      const ids = await store.db.selectFrom('stored_responses').select('id').orderBy('id').execute();
      assert.deepEqual(ids.map((r) => r.id), ['gen_admin', 'gen_young'], 'retention none stores nothing; the expired one is gone');
      assert.equal(await purgeExpiredResponses(store.db, now + 6 * DAY), 2);
    } finally {
      await store.close();
      await database.drop();
    }
  });
});
