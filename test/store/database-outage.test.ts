/**
 * PostgreSQL goes away and comes back (issue 18 item 1), on a private PostgreSQL server this
 * test starts, stops and cuts the connections of (never the shared one): the gateway on port 0
 * keeps answering, keeps every record and stored response until the database takes them, says
 * so on `/ready`, serves the keys it knows, refuses what it cannot know with a retryable 503, and
 * no database error ends the process (an unhandled 'error' event would fail this file).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { parseConfig } from '../../src/config/load.js';
import { buildGateway, type Gateway } from '../../src/server/app.js';
import { openDatabase, type OpenDatabase } from '../../src/store/database.js';
import { createKey } from '../../src/store/keys.js';
import { migrate } from '../../src/store/migrations.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { sleep, until as untilHolds } from '../helpers/poll.js';
import { privatePostgresMissing, startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ADMIN = 'outage-admin-key';

const completion = { json: { id: 'u', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } } };

interface Answer {
  status: number;
  id: string | null;
  body: Json;
  retryAfter: string | null;
}

/** Poll every 50 ms, for at most 30 s: a PostgreSQL restart takes seconds. */
const until = (what: string, check: () => Promise<boolean> | boolean): Promise<number> => untilHolds(what, check, 30_000, 50);

describe('PostgreSQL goes away and comes back', { skip: privatePostgresMissing }, () => {
  let server: PrivatePostgres;
  let upstream: Upstream;
  let store: OpenDatabase;
  let gateway: Gateway;
  let origin: string;
  let schemaName: string;

  /** Start a gateway (records.max_queued `maxQueued`) on a fresh schema of the private server. */
  async function start(schema: string, extra: Record<string, unknown> = {}, purgeIntervalMs = 0): Promise<void> {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    await admin.end();
    store = openDatabase(`${server.url}?options=${encodeURIComponent(`-c search_path=${schema}`)}`);
    await migrate(store.db);
    const config = parseConfig({
      retention: 1,
      records: { durability: 'strict' },
      routing: { circuit_breaker: { failure_threshold: 1000 }, retry_after_cap_ms: 0, recent_failure_ms: 0 },
      providers: [{ id: 'up', kind: 'openai', base_url: upstream.url, api_key: 'sk-up' }],
      models: [{ id: 'test/model', context_length: 8192, endpoints: [{ provider: 'up', upstream_model: 'm', pricing: { prompt: 1, completion: 2 } }] }],
      ...extra,
    }, 'test config');
    gateway = buildGateway({ loaded: { config, source: 'test' }, db: store.db, adminKey: ADMIN, logger: false, purgeIntervalMs });
    await gateway.app.listen({ port: 0, host: '127.0.0.1' });
    origin = `http://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}`;
    schemaName = schema;
  }

  /** One query on a connection of its own (the server is stopped and started under the test). */
  async function query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<T>> {
    const client = new pg.Client({ connectionString: server.url, application_name: 'outage-test' });
    await client.connect();
    try {
      await client.query(`set search_path = ${schemaName}`);
      return await client.query<T>(text, values);
    } finally {
      await client.end();
    }
  }

  async function stop(): Promise<void> {
    await gateway?.close();
    await store?.close();
  }

  async function chat(secret: string, extra: object = {}): Promise<Answer> {
    const res = await fetch(`${origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }], ...extra }),
    });
    return { status: res.status, id: res.headers.get('x-op-generation-id'), body: (await res.json()) as Json, retryAfter: res.headers.get('retry-after') };
  }

  const ready = () => fetch(`${origin}/ready`).then((r) => r.status);

  /** How many generation records each id has. */
  async function recordCounts(ids: string[]): Promise<number[]> {
    const rows = await query<{ id: string; n: string }>('select id, count(*) as n from generations where id = any($1) group by id', [ids]);
    const by = new Map(rows.rows.map((r) => [r.id, Number(r.n)]));
    return ids.map((id) => by.get(id) ?? 0);
  }

  before(async () => {
    server = await startPrivatePostgres();
    upstream = await startUpstream();
    upstream.setDefault(completion);
  });
  after(async () => {
    await upstream?.close();
    server?.destroy();
  });

  describe('pg_terminate_backend of every gateway connection', () => {
    after(stop);

    test('idle and with requests in flight: every request answers 200 with exactly one record, the purge lease is taken again', async () => {
      // Started in the test, so that an 'error' event nobody listens to fails this test.
      await start('terminated', {}, 1_000);
      const key = await createKey(store.db, 'k');
      // The purge's lease (a checked-out connection held for good) and the pool's idle connections.
      await until('the purge lease is held', async () => (await query("select count(*) as n from pg_locks l join pg_stat_activity a using (pid) where l.locktype = 'advisory' and a.application_name = 'opinference'")).rows[0]!.n === '1');
      assert.equal((await chat(key.secret)).status, 200);
      const idle = await server.terminate();
      assert.ok(idle >= 2, `${idle} connections terminated while idle`);
      // In flight: 40 requests, the connections cut while they run (upstream answers after 150 ms).
      upstream.setDefault({ ...completion, delayBeforeHeadersMs: 150 });
      const running = Promise.all(Array.from({ length: 40 }, (_, i) => sleep(i * 10).then(() => chat(key.secret))));
      let cut = 0;
      for (let i = 0; i < 4; i++) {
        await sleep(100);
        cut += await server.terminate();
      }
      const answers = await running;
      upstream.setDefault(completion);
      assert.ok(cut >= 1, `${cut} connections terminated with requests in flight`);
      assert.deepEqual(answers.map((a) => a.status), answers.map(() => 200));
      await until('every record written', async () => {
        await gateway.runtime().writer.flush();
        return gateway.runtime().writer.queued === 0;
      });
      assert.deepEqual(await recordCounts(answers.map((a) => a.id!)), answers.map(() => 1));
      assert.equal(gateway.runtime().writer.dropped, 0);
      // The lost lease is asked for again by the next purge run and held on a new connection.
      await until('the purge lease is held again', async () => (await query("select count(*) as n from pg_locks l join pg_stat_activity a using (pid) where l.locktype = 'advisory' and a.application_name = 'opinference'")).rows[0]!.n === '1');
      assert.equal(await ready(), 200);
    });
  });

  describe('PostgreSQL stopped for a few seconds', () => {
    before(() => start('stopped'));
    after(async () => {
      server.start();
      await stop();
    });

    test('answers go on, /ready is 503 until it is back, every 200 and stored response is written once it is, known keys are served, an unknown key gets 503', async () => {
      const known = await createKey(store.db, 'known');
      const unknown = await createKey(store.db, 'unknown');
      const first = await chat(known.secret);
      assert.equal(first.status, 200);
      assert.equal(await ready(), 200);

      server.stop();
      assert.equal(await ready(), 503);
      const ready503 = (await (await fetch(`${origin}/ready`)).json()) as Json;
      assert.match(ready503.reason, /ECONNREFUSED|cannot be reached/);
      // Past the 5 s key cache: the known key is served from its last known state.
      await sleep(5_500);
      const during: Answer[] = [];
      for (let i = 0; i < 10; i++) during.push(await chat(known.secret));
      assert.deepEqual(during.map((a) => a.status), during.map(() => 200));
      // A stored Response (retention 1 day) waits for the database too, and reads back meanwhile.
      const res = await fetch(`${origin}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${known.secret}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', input: 'hi' }) });
      assert.equal(res.status, 200);
      const response = (await res.json()) as Json;
      const kept = await fetch(`${origin}/v1/responses/${response.id}`, { headers: { authorization: `Bearer ${known.secret}` } });
      assert.equal(kept.status, 200);
      assert.equal(((await kept.json()) as Json).id, response.id);
      // A key not seen before cannot be checked: a retryable 503, not a 500.
      const refused = await chat(unknown.secret);
      assert.equal(refused.status, 503);
      assert.equal(refused.body.error.code, 'database_unavailable');
      assert.equal(refused.retryAfter, '1');
      // The usage API needs the database: a 503 too.
      const usage = await fetch(`${origin}/v1/usage`, { headers: { authorization: `Bearer ${ADMIN}` } });
      assert.equal(usage.status, 503);
      assert.equal(((await usage.json()) as Json).error.code, 'database_unavailable');
      assert.equal(await ready(), 503);
      assert.ok(gateway.runtime().writer.queued >= 11, `${gateway.runtime().writer.queued} records queued`);

      server.start();
      await until('/ready is 200 again', async () => (await ready()) === 200);
      await until('every record written', async () => {
        await gateway.runtime().writer.flush();
        return gateway.runtime().writer.queued === 0 && gateway.runtime().responses.queued === 0;
      });
      const ids = [first.id!, ...during.map((a) => a.id!), response.id as string];
      assert.deepEqual(await recordCounts(ids), ids.map(() => 1));
      assert.equal(gateway.runtime().writer.dropped, 0);
      const stored = await query('select id from stored_responses where id = $1', [response.id]);
      assert.equal(stored.rowCount, 1);
      // The key unknown during the outage works once the database is back (after the lookups'
      // 1 s without asking the database that follows a failed lookup).
      await until('the key unknown during the outage is served', async () => (await chat(unknown.secret)).status === 200);
    });
  });

  describe('the record queue reaches records.max_queued while PostgreSQL is down', () => {
    before(() => start('bounded', { records: { durability: 'batched', flush_interval_ms: 50, max_queued: 1000 } }));
    after(async () => {
      server.start();
      await stop();
    });

    test('new generation requests get 503 records_unavailable (Retry-After); no 200 loses its record; the drop counter counts only the refusals', async () => {
      const key = await createKey(store.db, 'k');
      assert.equal((await chat(key.secret)).status, 200);
      await gateway.runtime().writer.flush();
      server.stop();
      const answers: Answer[] = [];
      let refusals = 0;
      const worker = async () => {
        while (refusals < 20) {
          const a = await chat(key.secret);
          answers.push(a);
          if (a.status !== 200) refusals++;
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      const ok = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status !== 200);
      // The bound is checked at admission: requests admitted at the same moment (8 workers) may
      // each see the queue one below it, so up to 7 more than max_queued can be answered.
      assert.ok(ok.length >= 990 && ok.length <= 1000 + 7, `${ok.length} answered 200`);
      for (const r of refused) {
        assert.equal(r.status, 503, JSON.stringify(r.body));
        assert.equal(r.body.error.code, 'records_unavailable');
        assert.match(r.retryAfter ?? '', /^[1-5]$/);
      }
      assert.equal(gateway.runtime().writer.dropped, refused.length);
      const metrics = await (await fetch(`${origin}/metrics`)).text();
      assert.match(metrics, new RegExp(`opinference_records_dropped_total\\{reason="queue_full"\\} ${refused.length}\\b`));

      server.start();
      await until('every record written', async () => {
        await gateway.runtime().writer.flush();
        return gateway.runtime().writer.queued === 0;
      });
      assert.deepEqual(await recordCounts(ok.map((a) => a.id!)), ok.map(() => 1));
      assert.equal((await chat(key.secret)).status, 200);
    });
  });
});
