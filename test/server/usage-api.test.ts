/**
 * Usage API (`GET /v1/usage`) and generation search (`GET /v1/generations`): traffic through the
 * real gateway and a scripted upstream, at chosen times (Date.now is shifted while a request
 * starts, so records land in known hours and UTC days), then exact aggregates, key isolation,
 * pagination, every filter, bad parameters and index use of every filter combination.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery } from 'kysely';
import { sqlDialectOf } from '../../src/store/sql-dialect.js';
import { startUpstream, type ScriptedResponse, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { searchPlanQueries, type SearchQuery } from '../../src/store/generation-search.js';
import { histogramPercentiles, sessionRowsQuery, topSessionsQuery, type UsageQuery } from '../../src/store/usage-queries.js';
import { LATENCY_BUCKETS_MS } from '../../src/store/schema.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const config = (url: string) => ({
  providers: [
    { id: 'up', kind: 'openai', base_url: url, api_key: 'sk-1' },
    { id: 'up2', kind: 'openai', base_url: url, api_key: 'sk-2' },
  ],
  models: [
    { id: 'test/model', name: 'Test model', context_length: 8192, endpoints: [{ provider: 'up', upstream_model: 'm1', pricing: { prompt: 1, completion: 2 } }] },
    { id: 'test/other', name: 'Other model', context_length: 8192, endpoints: [{ provider: 'up2', upstream_model: 'm2', pricing: { prompt: 3, completion: 4 } }] },
  ],
});

const completion = (p: number, c: number): ScriptedResponse => ({
  json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c } },
});
const chunk = (content: string) => JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] });

/** Run `fn` with the clock reading `ms` at its start (and moving on from there). */
const realNow = Date.now.bind(Date);
async function at<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  const start = realNow();
  Date.now = () => ms + (realNow() - start);
  try {
    return await fn();
  } finally {
    Date.now = realNow;
  }
}

/** Stats of a row or totals without the percentiles (checked separately). */
const counts = (s: Json) => ({
  requests: s.requests,
  errors: s.errors,
  cancelled: s.cancelled,
  prompt_tokens: s.prompt_tokens,
  completion_tokens: s.completion_tokens,
  reasoning_tokens: s.reasoning_tokens,
  cached_tokens: s.cached_tokens,
  cost: s.cost,
});
const stats = (requests: number, errors: number, cancelled: number, prompt: number, completionTokens: number, cost: string) => ({
  requests, errors, cancelled, prompt_tokens: prompt, completion_tokens: completionTokens, reasoning_tokens: 0, cached_tokens: 0, cost,
});
/** Picodollars as the API's USD string. */
const usd = (pico: number) => {
  const s = String(pico).padStart(13, '0');
  const frac = s.slice(-12).replace(/0+$/, '');
  return `${Number(s.slice(0, -12))}${frac ? `.${frac}` : ''}`;
};

describe('usage API and generation search', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let alice: { secret: string; id: string };
  let bob: { secret: string; id: string };
  /** Midnight UTC two days ago; traffic at D+22:10, D+23:10 and D+1 00:10. */
  const D = Math.floor(Date.now() / DAY) * DAY - 2 * DAY;
  const T1 = D + 22 * HOUR + 10 * 60_000;
  const T2 = D + 23 * HOUR + 10 * 60_000;
  const T3 = D + 24 * HOUR + 10 * 60_000;
  /** Generation ids by row number (1–8, the table below). */
  const ids: Record<number, string> = {};
  const requestIds: Record<number, string> = {};
  /** The cancelled generation's record (its usage is estimated from what streamed). */
  let cancelledRow: Json;

  const post = (key: string, body: unknown, signal?: AbortSignal) =>
    fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body), signal });
  const get = async (key: string, path: string, query: Record<string, string | number> = {}) => {
    const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
    const res = await fetch(`${gw.baseURL}${path}${qs ? `?${qs}` : ''}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const usage = async (key: string, query: Record<string, string | number>) => {
    const r = await get(key, '/usage', { from: D, to: D + 2 * DAY, ...query });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  const search = async (key: string, query: Record<string, string | number> = {}) => {
    const r = await get(key, '/generations', { limit: 200, ...query });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  /** Row numbers of a search result, in order. */
  const rowsOf = (body: Json) => (body.data as Json[]).map((g) => Number(Object.entries(ids).find(([, id]) => id === g.id)?.[0] ?? 0));

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(config(upstream.url));
    alice = await gw.createKey('alice');
    bob = await gw.createKey('bob');
    const send = async (n: number, key: string, body: Json, response: ScriptedResponse) => {
      upstream.enqueue(response);
      const res = await post(key, { messages: [{ role: 'user', content: `request ${n}` }], ...body });
      await res.text();
      requestIds[n] = res.headers.get('x-request-id')!;
      return res.status;
    };
    //  #  time key    model       provider tags   session status     prompt completion cost (µ$)
    //  1  T1   alice  test/model  up       a      s1      success    10     5          20
    //  2  T1   alice  test/model  up       a,b    s1      success*   20     10         40   (* streamed)
    //  3  T1   bob    test/other  up2      -      s3      success    100    50         500
    //  4  T2   alice  test/other  up2      b      s2      success    10     10         70
    //  5  T2   bob    test/model  -        -      -       error      -      -          0    (upstream 500)
    //  6  T2   admin  test/model  up       a      -       success    1      1          3
    //  7  T3   alice  test/model  up       a      s1      success    5      5          15
    //  8  T3   bob    test/other  up2      b      s3      cancelled  (estimated from the stream)
    await at(T1, async () => {
      assert.equal(await send(1, alice.secret, { model: 'test/model', op: { tags: ['a'], session: 's1' } }, completion(10, 5)), 200);
      upstream.enqueue({
        sse: [chunk('streamed'), JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }), JSON.stringify({ choices: [], usage: { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 } })],
      });
      const res = await post(alice.secret, { model: 'test/model', stream: true, messages: [{ role: 'user', content: 'request 2' }], op: { tags: ['a', 'b'], session: 's1' } });
      requestIds[2] = res.headers.get('x-request-id')!;
      await res.text();
      assert.equal(await send(3, bob.secret, { model: 'test/other', op: { session: 's3' } }, completion(100, 50)), 200);
    });
    await at(T2, async () => {
      assert.equal(await send(4, alice.secret, { model: 'test/other', op: { tags: ['b'], session: 's2' } }, completion(10, 10)), 200);
      assert.notEqual(await send(5, bob.secret, { model: 'test/model' }, { status: 500, json: { error: { message: 'boom' } } }), 200);
      assert.equal(await send(6, gw.adminKey, { model: 'test/model', op: { tags: ['a'] } }, completion(1, 1)), 200);
    });
    await at(T3, async () => {
      assert.equal(await send(7, alice.secret, { model: 'test/model', op: { tags: ['a'], session: 's1' } }, completion(5, 5)), 200);
      upstream.enqueue({ sse: Array.from({ length: 20 }, (_, i) => chunk(`part ${i} `)), delayMs: 150 });
      const ac = new AbortController();
      const res = await post(bob.secret, { model: 'test/other', stream: true, messages: [{ role: 'user', content: 'request 8' }], op: { tags: ['b'], session: 's3' } }, ac.signal);
      requestIds[8] = res.headers.get('x-request-id')!;
      const reader = res.body!.getReader();
      await reader.read();
      ac.abort();
      await upstream.waitForAbort();
    });
    for (let i = 0; i < 100; i++) {
      await gw.flush();
      const row = await gw.store.db.selectFrom('generations').selectAll().where('request_id', '=', requestIds[8]!).executeTakeFirst();
      if (row) {
        cancelledRow = row;
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(cancelledRow, 'the cancelled generation was recorded');
    assert.equal(cancelledRow.status, 'cancelled');
    const n = await gw.store.db.selectFrom('generations').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    assert.equal(Number(n.n), 8);
    for (const r of await gw.store.db.selectFrom('generations').select(['id', 'request_id']).execute()) {
      ids[Number(Object.entries(requestIds).find(([, rid]) => rid === r.request_id)![0])] = r.id;
    }
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  /** The cancelled row's estimated counts. */
  const c8 = () => ({ p: cancelledRow.prompt_tokens as number, c: cancelledRow.completion_tokens as number, cost: Number(cancelledRow.cost_pico) });
  const M = 1_000_000; // picodollars per µ$

  test('records landed where the table says', async () => {
    const rows = await gw.store.db.selectFrom('generations').selectAll().orderBy('created_at').execute();
    const by = new Map(rows.map((r) => [r.id, r]));
    assert.equal(by.get(ids[5]!)!.status, 'error');
    assert.equal(by.get(ids[5]!)!.provider, null);
    assert.equal(by.get(ids[6]!)!.key_id, null);
    assert.equal(Number(by.get(ids[3]!)!.cost_pico), 500 * M);
    assert.ok(Number(by.get(ids[2]!)!.created_at) >= T1 && Number(by.get(ids[2]!)!.created_at) < T1 + HOUR);
    assert.ok(c8().c > 0, 'the cancelled stream counted what it streamed');
  });

  test('minute buckets: each minute with traffic, the same sums as the hourly rollups, at most 6 hours', async () => {
    const range = { from: T1 - 10 * 60_000, to: T1 - 10 * 60_000 + 3 * HOUR };
    const minutes = await usage(gw.adminKey, { ...range, bucket: 'minute' });
    const hours = await usage(gw.adminKey, { ...range, bucket: 'hour' });
    assert.equal(minutes.bucket, 'minute');
    assert.deepEqual(minutes.data.map((r: Json) => [r.bucket, r.requests]), [
      [new Date(T1).toISOString(), 3],
      [new Date(T2).toISOString(), 3],
      [new Date(T3).toISOString(), 2],
    ]);
    assert.deepEqual(counts(minutes.totals), counts(hours.totals));
    assert.deepEqual(minutes.totals.cost, hours.totals.cost);
    const byModel = await usage(gw.adminKey, { ...range, bucket: 'minute', group_by: 'model' });
    assert.deepEqual(byModel.data.filter((r: Json) => r.bucket === new Date(T1).toISOString()).map((r: Json) => [r.group, r.requests]), [['test/model', 2], ['test/other', 1]]);
    const tooLong = await get(gw.adminKey, '/usage', { from: T1, to: T1 + 6 * HOUR + 60_000, bucket: 'minute' });
    assert.equal(tooLong.status, 400);
    assert.equal(tooLong.body.error.param, 'from');
    assert.match(tooLong.body.error.message, /longer than 6 hours, the most for bucket=minute \(use bucket=hour\)/);
  });

  test('hour buckets, no grouping: exact sums per hour and in total', async () => {
    const body = await usage(gw.adminKey, { bucket: 'hour' });
    assert.equal(body.from, new Date(D).toISOString());
    assert.equal(body.to, new Date(D + 2 * DAY).toISOString());
    assert.equal(body.bucket, 'hour');
    assert.equal(body.group_by, null);
    assert.deepEqual(body.data.map((r: Json) => [r.bucket, r.group]), [
      [new Date(T1 - 10 * 60_000).toISOString(), null],
      [new Date(T2 - 10 * 60_000).toISOString(), null],
      [new Date(T3 - 10 * 60_000).toISOString(), null],
    ]);
    const { p, c, cost } = c8();
    assert.deepEqual(counts(body.data[0]), stats(3, 0, 0, 130, 65, '0.00056'));
    assert.deepEqual(counts(body.data[1]), stats(3, 1, 0, 11, 11, '0.000073'));
    assert.deepEqual(counts(body.data[2]), stats(2, 0, 1, 5 + p, 5 + c, usd(15 * M + cost)));
    assert.deepEqual(counts(body.totals), stats(8, 1, 1, 146 + p, 81 + c, usd(648 * M + cost)));
    // Latency of every request, time to first token of those that produced output.
    for (const r of [...body.data, body.totals]) {
      for (const l of [r.latency_ms, r.ttft_ms]) assert.ok(l && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p50 >= 0, JSON.stringify(l));
    }
  });

  test('day buckets are UTC days; from is rounded down to its bucket, to up to the hour', async () => {
    const body = await usage(gw.adminKey, { bucket: 'day', from: new Date(D + 5 * HOUR + 123).toISOString(), to: D + DAY + 2 * HOUR + 1 });
    assert.equal(body.from, new Date(D).toISOString());
    assert.equal(body.to, new Date(D + DAY + 3 * HOUR).toISOString());
    const { p, c, cost } = c8();
    assert.deepEqual(body.data.map((r: Json) => [r.bucket, counts(r)]), [
      [new Date(D).toISOString(), stats(6, 1, 0, 141, 76, '0.000633')],
      [new Date(D + DAY).toISOString(), stats(2, 0, 1, 5 + p, 5 + c, usd(15 * M + cost))],
    ]);
    // An hour range that misses the traffic: empty data, zero totals, no percentiles.
    const none = await usage(gw.adminKey, { from: D, to: D + HOUR });
    assert.deepEqual(none.data, []);
    assert.deepEqual(counts(none.totals), stats(0, 0, 0, 0, 0, '0'));
    assert.equal(none.totals.latency_ms, null);
    assert.equal(none.totals.ttft_ms, null);
  });

  test('group_by model, provider and key', async () => {
    const { p, c, cost } = c8();
    const day1 = new Date(D).toISOString();
    const day2 = new Date(D + DAY).toISOString();
    const byModel = await usage(gw.adminKey, { bucket: 'day', group_by: 'model' });
    assert.equal(byModel.group_by, 'model');
    assert.deepEqual(byModel.data.map((r: Json) => [r.bucket, r.group, counts(r)]), [
      [day1, 'test/model', stats(4, 1, 0, 31, 16, '0.000063')],
      [day1, 'test/other', stats(2, 0, 0, 110, 60, '0.00057')],
      [day2, 'test/model', stats(1, 0, 0, 5, 5, '0.000015')],
      [day2, 'test/other', stats(1, 0, 1, p, c, usd(cost))],
    ]);
    assert.deepEqual(counts(byModel.totals), stats(8, 1, 1, 146 + p, 81 + c, usd(648 * M + cost)));

    const byProvider = await usage(gw.adminKey, { bucket: 'day', group_by: 'provider' });
    assert.deepEqual(byProvider.data.map((r: Json) => [r.bucket, r.group, counts(r)]), [
      [day1, null, stats(1, 1, 0, 0, 0, '0')], // no provider answered (#5)
      [day1, 'up', stats(3, 0, 0, 31, 16, '0.000063')],
      [day1, 'up2', stats(2, 0, 0, 110, 60, '0.00057')],
      [day2, 'up', stats(1, 0, 0, 5, 5, '0.000015')],
      [day2, 'up2', stats(1, 0, 1, p, c, usd(cost))],
    ]);
    // #5 failed before any output: a latency, no time to first token.
    assert.notEqual(byProvider.data[0].latency_ms, null);
    assert.equal(byProvider.data[0].ttft_ms, null);

    const byKey = await usage(gw.adminKey, { bucket: 'day', group_by: 'key', from: D, to: D + DAY });
    const expected: [string | null, ReturnType<typeof stats>][] = [
      [null, stats(1, 0, 0, 1, 1, '0.000003')], // the admin key (#6)
      [alice.id, stats(3, 0, 0, 40, 25, '0.00013')], // #1 #2 #4
      [bob.id, stats(2, 1, 0, 100, 50, '0.0005')], // #3 #5
    ];
    expected.sort((a, b) => (a[0] === null ? -1 : b[0] === null ? 1 : a[0] < b[0] ? -1 : 1));
    assert.deepEqual(byKey.data.map((r: Json) => [r.group, counts(r)]), expected);
  });

  test('group_by tag: a generation with two tags is in both groups but once in the totals', async () => {
    const { p, c, cost } = c8();
    const body = await usage(gw.adminKey, { bucket: 'day', group_by: 'tag' });
    assert.deepEqual(body.data.map((r: Json) => [r.bucket, r.group, counts(r)]), [
      [new Date(D).toISOString(), 'a', stats(3, 0, 0, 31, 16, '0.000063')], // #1 #2 #6
      [new Date(D).toISOString(), 'b', stats(2, 0, 0, 30, 20, '0.00011')], // #2 #4
      [new Date(D + DAY).toISOString(), 'a', stats(1, 0, 0, 5, 5, '0.000015')], // #7
      [new Date(D + DAY).toISOString(), 'b', stats(1, 0, 1, p, c, usd(cost))], // #8
    ]);
    assert.deepEqual(counts(body.totals), stats(8, 1, 1, 146 + p, 81 + c, usd(648 * M + cost)));
    // Filtered by a tag: only its generations, also in the totals.
    const b = await usage(gw.adminKey, { bucket: 'day', tag: 'b', group_by: 'model' });
    assert.deepEqual(b.data.map((r: Json) => [r.group, r.requests]), [
      ['test/model', 1],
      ['test/other', 1],
      ['test/other', 1],
    ]);
    assert.deepEqual(counts(b.totals), stats(3, 0, 1, 30 + p, 20 + c, usd(110 * M + cost)));
  });

  test('group_by session: per session and bucket; totals count every generation', async () => {
    const { p, c, cost } = c8();
    const body = await usage(gw.adminKey, { bucket: 'day', group_by: 'session' });
    assert.equal(body.group_by, 'session');
    assert.deepEqual(body.data.map((r: Json) => [r.bucket, r.group, counts(r)]), [
      [new Date(D).toISOString(), 's1', stats(2, 0, 0, 30, 15, '0.00006')],
      [new Date(D).toISOString(), 's2', stats(1, 0, 0, 10, 10, '0.00007')],
      [new Date(D).toISOString(), 's3', stats(1, 0, 0, 100, 50, '0.0005')],
      [new Date(D + DAY).toISOString(), 's1', stats(1, 0, 0, 5, 5, '0.000015')],
      [new Date(D + DAY).toISOString(), 's3', stats(1, 0, 1, p, c, usd(cost))],
    ]);
    assert.deepEqual(counts(body.totals), stats(8, 1, 1, 146 + p, 81 + c, usd(648 * M + cost)));
    // With filters: alice's sessions on test/model.
    const mine = await usage(gw.adminKey, { bucket: 'day', group_by: 'session', key_id: alice.id, model: 'test/model' });
    assert.deepEqual(mine.data.map((r: Json) => [r.group, r.requests]), [
      ['s1', 2],
      ['s1', 1],
    ]);
    assert.deepEqual(counts(mine.totals), stats(3, 0, 0, 35, 20, '0.000075'));
  });

  test('filters: model, provider, key_id (admin also "admin"), tag', async () => {
    const { p, c, cost } = c8();
    const total = async (q: Record<string, string>) => counts((await usage(gw.adminKey, { bucket: 'day', ...q })).totals);
    assert.deepEqual(await total({ model: 'test/other' }), stats(3, 0, 1, 110 + p, 60 + c, usd(570 * M + cost)));
    assert.deepEqual(await total({ model: 'test/model' }), stats(5, 1, 0, 36, 21, '0.000078'));
    assert.deepEqual(await total({ provider: 'up' }), stats(4, 0, 0, 36, 21, '0.000078'));
    assert.deepEqual(await total({ key_id: alice.id }), stats(4, 0, 0, 45, 30, '0.000145'));
    assert.deepEqual(await total({ key_id: 'admin' }), stats(1, 0, 0, 1, 1, '0.000003'));
    assert.deepEqual(await total({ tag: 'a' }), stats(4, 0, 0, 36, 21, '0.000078'));
    assert.deepEqual(await total({ tag: 'a', key_id: alice.id, provider: 'up', model: 'test/model' }), stats(3, 0, 0, 35, 20, '0.000075'));
    assert.deepEqual(await total({ model: 'nope' }), stats(0, 0, 0, 0, 0, '0'));
  });

  test('a key sees only its own usage; naming another key is a 404', async () => {
    const own = await usage(alice.secret, { bucket: 'day', group_by: 'key' });
    assert.deepEqual(own.data.map((r: Json) => [r.group, r.requests]), [
      [alice.id, 3],
      [alice.id, 1],
    ]);
    assert.deepEqual(counts(own.totals), stats(4, 0, 0, 45, 30, '0.000145'));
    const explicit = await usage(alice.secret, { bucket: 'day', group_by: 'key', key_id: alice.id });
    assert.deepEqual(explicit, own);
    const other = await get(alice.secret, '/usage', { key_id: bob.id });
    assert.equal(other.status, 404);
    assert.equal(other.body.error.code, 'not_found');
    assert.equal(other.body.error.param, 'key_id');
    assert.equal((await get(alice.secret, '/usage', { key_id: 'admin' })).status, 404);
    const sessions = await usage(bob.secret, { bucket: 'day', group_by: 'session' });
    assert.deepEqual(sessions.data.map((r: Json) => [r.group, r.requests]), [
      ['s3', 1],
      ['s3', 1],
    ]);
    assert.equal(sessions.totals.requests, 3);
    assert.equal(sessions.totals.errors, 1);
  });

  test('the default range is the last 24 hours, in hour buckets', async () => {
    const before = Date.now();
    const res = await get(gw.adminKey, '/usage');
    assert.equal(res.status, 200);
    const from = Date.parse(res.body.from);
    const to = Date.parse(res.body.to);
    assert.equal(res.body.bucket, 'hour');
    assert.equal(to, Math.ceil(Date.now() / HOUR) * HOUR);
    assert.equal(from, Math.floor((before - DAY) / HOUR) * HOUR);
    for (const r of res.body.data) assert.ok(Date.parse(r.bucket) >= from && Date.parse(r.bucket) < to);
  });

  test('bad usage parameters are 400 invalid_request naming the parameter', async () => {
    const cases: [Record<string, string | number>, string][] = [
      [{ bucket: 'week' }, 'bucket'],
      [{ group_by: 'color' }, 'group_by'],
      [{ from: 'yesterday' }, 'from'],
      [{ to: '2025-13-45T99:00:00Z' }, 'to'],
      [{ from: D + DAY, to: D }, 'from'],
      [{ from: D, to: D }, 'from'],
      [{ from: D - 40 * DAY, to: D, bucket: 'hour' }, 'from'],
      [{ from: D - 8 * DAY, to: D, bucket: 'hour' }, 'from'],
      [{ groupby: 'model' }, 'groupby'],
      [{ model: 'x'.repeat(300) }, 'model'],
    ];
    for (const [query, param] of cases) {
      const r = await get(gw.adminKey, '/usage', query);
      assert.equal(r.status, 400, `${JSON.stringify(query)} → ${r.status}`);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.equal(r.body.error.param, param, JSON.stringify(query));
    }
    const twice = await fetch(`${gw.baseURL}/usage?bucket=hour&bucket=day`, { headers: { authorization: `Bearer ${gw.adminKey}` } });
    assert.equal(twice.status, 400);
    assert.equal(((await twice.json()) as Json).error.param, 'bucket');
    // Hour buckets stop at 7 days (they read hourly rollups), with a hint to use day buckets.
    const week = await get(gw.adminKey, '/usage', { from: D - 8 * DAY, to: D, bucket: 'hour' });
    assert.match(week.body.error.message, /7 days.*bucket=day/);
    assert.equal((await get(gw.adminKey, '/usage', { from: D - 7 * DAY, to: D, bucket: 'hour' })).status, 200);
    // A 40-day range is fine in day buckets; ISO dates without a time are UTC midnight.
    assert.equal((await get(gw.adminKey, '/usage', { from: D - 40 * DAY, to: D, bucket: 'day' })).status, 200);
    const dated = await get(gw.adminKey, '/usage', { from: new Date(D).toISOString().slice(0, 10), to: new Date(D + DAY).toISOString().slice(0, 10) });
    assert.equal(dated.body.from, new Date(D).toISOString());
    assert.equal(dated.body.to, new Date(D + DAY).toISOString());
    assert.equal((await get('wrong-key', '/usage')).status, 401);
  });

  test('search: newest first, no content field, the public record shape', async () => {
    const body = await search(gw.adminKey);
    assert.deepEqual(rowsOf(body), [8, 7, 6, 5, 4, 3, 2, 1]);
    assert.equal(body.next_cursor, null);
    const g = body.data.find((x: Json) => x.id === ids[3]);
    assert.equal('content' in g, false);
    assert.equal(g.model, 'test/other');
    assert.equal(g.provider_name, 'up2');
    assert.equal(g.api_key_id, bob.id);
    assert.equal(g.total_cost, '0.0005');
    assert.equal(g.tokens_prompt, 100);
    assert.equal(g.session_id, 's3');
    assert.equal(g.status, 'success');
    assert.equal(g.created_at, new Date(Date.parse(g.created_at)).toISOString());
    const times = body.data.map((x: Json) => Date.parse(x.created_at));
    assert.deepEqual(times, [...times].sort((a, b) => b - a));
  });

  test('search: walking every page with limit 2 gives each generation once, in order', async () => {
    for (const key of [gw.adminKey, alice.secret, bob.secret]) {
      const all = rowsOf(await search(key));
      const seen: number[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: Json = await search(key, cursor ? { limit: 2, cursor } : { limit: 2 });
        assert.ok(page.data.length <= 2);
        seen.push(...rowsOf(page));
        cursor = page.next_cursor;
        pages++;
        if (cursor === null) assert.ok(page.data.length > 0 || pages === 1);
      } while (cursor !== null && pages < 20);
      assert.deepEqual(seen, all);
      assert.equal(new Set(seen).size, seen.length);
      assert.equal(pages, Math.ceil(all.length / 2));
    }
    // A cursor with filters continues the filtered walk.
    const first = await search(gw.adminKey, { limit: 1, model: 'test/other' });
    assert.deepEqual(rowsOf(first), [8]);
    const second = await search(gw.adminKey, { limit: 5, model: 'test/other', cursor: first.next_cursor });
    assert.deepEqual(rowsOf(second), [4, 3]);
    assert.equal(second.next_cursor, null);
  });

  test('search: each filter and some combinations', async () => {
    const cases: [Record<string, string | number>, number[]][] = [
      [{ model: 'test/other' }, [8, 4, 3]],
      [{ model: 'test/model' }, [7, 6, 5, 2, 1]], // #5 by its requested model
      [{ provider: 'up2' }, [8, 4, 3]],
      [{ provider: 'up' }, [7, 6, 2, 1]],
      [{ status: 'error' }, [5]],
      [{ status: 'cancelled' }, [8]],
      [{ status: 'success' }, [7, 6, 4, 3, 2, 1]],
      [{ key_id: alice.id }, [7, 4, 2, 1]],
      [{ key_id: bob.id }, [8, 5, 3]],
      [{ key_id: 'admin' }, [6]],
      [{ tag: 'a' }, [7, 6, 2, 1]],
      [{ tag: 'b' }, [8, 4, 2]],
      [{ session: 's1' }, [7, 2, 1]],
      [{ session: 'nope' }, []],
      [{ from: T2 - 10 * 60_000, to: T3 - 10 * 60_000 }, [6, 5, 4]],
      [{ from: new Date(T3 - 10 * 60_000).toISOString() }, [8, 7]],
      [{ to: T1 + HOUR }, [3, 2, 1]],
      [{ tag: 'b', key_id: alice.id }, [4, 2]],
      [{ tag: 'a', session: 's1', model: 'test/model', provider: 'up', status: 'success', key_id: alice.id, from: D, to: T3 }, [2, 1]],
      [{ key_id: bob.id, status: 'error', model: 'test/model' }, [5]],
      [{ model: 'test/other', tag: 'b', status: 'cancelled' }, [8]],
      [{ provider: 'up', session: 's3' }, []],
    ];
    for (const [query, expected] of cases) assert.deepEqual(rowsOf(await search(gw.adminKey, query)), expected, JSON.stringify(query));
  });

  test('search: a key sees only its own generations; naming another key is a 404', async () => {
    assert.deepEqual(rowsOf(await search(alice.secret)), [7, 4, 2, 1]);
    assert.deepEqual(rowsOf(await search(alice.secret, { key_id: alice.id, tag: 'b' })), [4, 2]);
    assert.deepEqual(rowsOf(await search(bob.secret, { tag: 'b' })), [8]);
    assert.deepEqual(rowsOf(await search(bob.secret, { model: 'test/model' })), [5]);
    for (const key_id of [bob.id, 'admin']) {
      const r = await get(alice.secret, '/generations', { key_id });
      assert.equal(r.status, 404);
      assert.equal(r.body.error.code, 'not_found');
      assert.equal(r.body.error.param, 'key_id');
    }
  });

  test('bad search parameters are 400 invalid_request naming the parameter', async () => {
    const cases: [Record<string, string | number>, string][] = [
      [{ limit: 0 }, 'limit'],
      [{ limit: 201 }, 'limit'],
      [{ limit: 'ten' }, 'limit'],
      [{ limit: 2.5 }, 'limit'],
      [{ cursor: 'not-a-cursor' }, 'cursor'],
      [{ cursor: Buffer.from('[1,2]').toString('base64url') }, 'cursor'],
      [{ status: 'ok' }, 'status'],
      [{ from: 'soon' }, 'from'],
      [{ from: T2, to: T1 }, 'from'],
      [{ sort: 'asc' }, 'sort'],
    ];
    for (const [query, param] of cases) {
      const r = await get(gw.adminKey, '/generations', query);
      assert.equal(r.status, 400, `${JSON.stringify(query)} → ${r.status}`);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.equal(r.body.error.param, param, JSON.stringify(query));
    }
    assert.equal((await get(gw.adminKey, '/generations', { limit: 200 })).status, 200);
  });

  test('every combination of search filters walks an index (EXPLAIN QUERY PLAN / EXPLAIN)', async () => {
    const db = gw.store.db;
    const dialect = sqlDialectOf(db);
    const pg = dialect.name === 'postgres';
    // PostgreSQL plans these few rows with sequential scans off: what remains is what no index serves.
    const explain = (compiled: CompiledQuery) => dialect.explain(db, compiled, { preferIndexes: true });
    /** PostgreSQL: an index of `table` read (`Index [Only] Scan … on table`, `Bitmap Index Scan on <index of table>`). */
    const pgIndexRead = (plan: string[], table: string, index = `${table}\\w*`) => plan.some((l) => new RegExp(`Index (Only )?Scan (Backward )?using ${index} on ${table}\\b|Bitmap Index Scan on ${index}\\b`).test(l));
    const page = await search(gw.adminKey, { limit: 3 });
    const filters: [string, Partial<SearchQuery>][] = [
      ['model', { model: 'test/model' }],
      ['provider', { provider: 'up' }],
      ['status', { status: 'error' }],
      ['key', { keyId: alice.id }],
      ['tag', { tag: 'a' }],
      ['session', { session: 's1' }],
      ['time', { from: D, to: D + 2 * DAY }],
      ['cursor', { cursor: page.next_cursor }],
    ];
    let plans = 0;
    for (let mask = 0; mask < 1 << filters.length; mask++) {
      const q: SearchQuery = { limit: 50 };
      for (let i = 0; i < filters.length; i++) if (mask & (1 << i)) Object.assign(q, filters[i]![1]);
      for (const compiled of await searchPlanQueries(db, q)) {
        const plan = await explain(compiled);
        plans++;
        const name = filters.filter((_, i) => mask & (1 << i)).map(([n]) => n).join('+') || 'none';
        if (pg) {
          assert.ok(!dialect.scansWithoutIndex(plan, 'generations') && !dialect.scansWithoutIndex(plan, 'generation_tags'), `${name} scans a table: ${plan.join(' | ')}`);
          assert.ok(pgIndexRead(plan, 'generations') || pgIndexRead(plan, 'generation_tags'), `${name}: ${plan.join(' | ')}`);
          continue;
        }
        // Only index walks: `SEARCH … USING INDEX`, or `SCAN g USING INDEX generations_created` (newest first, no filter).
        assert.ok(!plan.some((l) => /^(SCAN|SEARCH) \w+$/.test(l)), `${name} scans a table: ${plan.join(' | ')}`);
        assert.ok(plan.some((l) => /^(SEARCH|SCAN) (g|t) USING (COVERING )?INDEX generation/.test(l)), `${name}: ${plan.join(' | ')}`);
        assert.ok(!plan.some((l) => /TEMP B-TREE FOR ORDER BY/.test(l)), `${name} sorts every match: ${plan.join(' | ')}`);
      }
    }
    assert.ok(plans >= 256);
    // The top-sessions read of group_by session: whole days from the daily session counts that
    // hold the filters' columns, by day range; partial days through an index of generations.
    const ranges = [
      { from: D, to: D + DAY, days: true, partial: false },
      { from: D + 2 * HOUR, to: D + 5 * HOUR, days: false, partial: true },
      { from: D - 20 * DAY + 5 * HOUR, to: D + DAY + 3 * HOUR, days: true, partial: true },
    ];
    const filtered: [Partial<UsageQuery>, string][] = [
      [{}, 'usage_daily_sessions'],
      [{ keyId: alice.id }, 'usage_daily_sessions'],
      [{ keyId: null }, 'usage_daily_sessions'],
      [{ model: 'test/model' }, 'usage_daily_session_models'],
      [{ provider: 'up' }, 'usage_daily_session_models'],
      [{ tag: 'a' }, 'usage_daily_session_tags'],
      [{ tag: 'a', model: 'test/model', keyId: alice.id }, 'usage_daily_session_tags'],
    ];
    for (const { days, partial, ...range } of ranges) {
      for (const [filter, table] of filtered) {
        const q = { ...range, ...filter, bucket: 'hour' as const, groupBy: 'session' as const };
        const compiled = topSessionsQuery(db, q).compile();
        const plan = await explain(compiled);
        const shown = `${JSON.stringify(q)}: ${plan.join(' | ')}`;
        if (pg) {
          for (const t of ['generations', 'usage_daily_sessions', 'usage_daily_session_models', 'usage_daily_session_tags']) assert.ok(!dialect.scansWithoutIndex(plan, t), shown);
          assert.equal(pgIndexRead(plan, table, `${table}_pk`), days || partial, shown);
          assert.ok(!plan.some((l) => /usage_daily\w*/.exec(l) && !l.includes(table)), shown);
          assert.equal(pgIndexRead(plan, 'generations'), partial, shown);
          continue;
        }
        assert.ok(!plan.some((l) => /^SCAN (generations|usage_daily\w*)$/.test(l)), shown);
        assert.equal(plan.some((l) => l.startsWith(`SEARCH ${table} USING PRIMARY KEY (day>? AND day<?)`)), days || partial, shown);
        assert.ok(!plan.some((l) => /^SEARCH usage_daily/.test(l) && !l.startsWith(`SEARCH ${table} `)), shown);
        assert.equal(plan.some((l) => /^SEARCH generations USING (COVERING )?INDEX/.test(l)), partial, shown);
      }
    }
    for (const q of [
      { from: D, to: D + DAY, bucket: 'day' as const, groupBy: 'session' as const },
      { from: D - 20 * DAY, to: D + DAY, bucket: 'day' as const, groupBy: 'session' as const, keyId: alice.id },
      { from: D - 20 * DAY, to: D + DAY, bucket: 'day' as const, groupBy: 'session' as const, model: 'test/model' },
      { from: D - 20 * DAY, to: D + DAY, bucket: 'day' as const, groupBy: 'session' as const, provider: 'up' },
      { from: D - 20 * DAY, to: D + DAY, bucket: 'day' as const, groupBy: 'session' as const, tag: 'a' },
    ]) {
      // The chosen sessions' rows: through the session index, whatever the filters.
      const rows = sessionRowsQuery(db, q, ['s1', 's3']).compile();
      const rowsPlan = await explain(rows);
      if (pg) {
        // Which index wins on a few rows is the planner's call (at scale it is the session one: see the usage bench).
        assert.ok(pgIndexRead(rowsPlan, 'generations') && !dialect.scansWithoutIndex(rowsPlan, 'generations'), rowsPlan.join(' | '));
        continue;
      }
      assert.match(rowsPlan[0]!, /^SEARCH generations USING INDEX generations_session_created \(session=\? AND created_at>\? AND created_at<\?\)/, rowsPlan.join(' | '));
    }
  });

  // Last: it adds traffic at the current time, which the searches above would see.
  test('refusals (a 400 validation error, an unknown model) are counted apart from errors, by group too, in the rollups when written', async () => {
    const from = Math.floor(Date.now() / HOUR) * HOUR;
    const invalid = await post(alice.secret, { model: 'test/model', temperature: 9, messages: [{ role: 'user', content: 'too hot' }] });
    assert.equal(invalid.status, 400);
    assert.equal(((await invalid.json()) as Json).error.code, 'invalid_request');
    const unknown = await post(alice.secret, { model: 'test/nope', messages: [{ role: 'user', content: 'who?' }] });
    assert.equal(unknown.status, 404);
    await unknown.text();
    upstream.enqueue({ status: 500, json: { error: { message: 'boom' } } });
    const failed = await post(alice.secret, { model: 'test/model', messages: [{ role: 'user', content: 'upstream fails' }] });
    assert.equal(failed.status, 502);
    await failed.text();
    await gw.flush();

    const range = { from, to: from + 2 * HOUR, bucket: 'hour' };
    const plain = await usage(alice.secret, range);
    assert.deepEqual([plain.totals.requests, plain.totals.errors, plain.totals.refused, plain.totals.cancelled], [3, 1, 2, 0]);
    assert.deepEqual(plain.data.map((r: Json) => [r.requests, r.errors, r.refused]), [[3, 1, 2]]);
    const byModel = await usage(alice.secret, { ...range, group_by: 'model' });
    assert.deepEqual(byModel.data.map((r: Json) => [r.group, r.requests, r.errors, r.refused]), [['test/model', 2, 1, 1], ['test/nope', 1, 0, 1]]);
    assert.deepEqual([byModel.totals.errors, byModel.totals.refused], [1, 2]);
    const byProvider = await usage(gw.adminKey, { ...range, group_by: 'provider', key_id: alice.id });
    assert.deepEqual(byProvider.data.map((r: Json) => [r.group, r.requests, r.errors, r.refused]), [[null, 3, 1, 2]]);
    const bySession = await usage(alice.secret, { ...range, group_by: 'session' });
    assert.deepEqual([bySession.totals.errors, bySession.totals.refused], [1, 2]);

    // The search splits them the same way: status=refused, and error without the refusals.
    const since = { key_id: alice.id, from };
    const refusedIds = (await search(gw.adminKey, { ...since, status: 'refused' })).data.map((g: Json) => [g.error_code, g.refused]);
    assert.deepEqual(refusedIds.sort(), [['invalid_request', true], ['no_endpoint_available', true]]);
    assert.deepEqual((await search(gw.adminKey, { ...since, status: 'error' })).data.map((g: Json) => [g.http_status, g.refused]), [[502, false]]);
    // Minute buckets (read from the generations) count them alike.
    const minutes = await usage(alice.secret, { ...range, bucket: 'minute' });
    assert.equal(minutes.bucket, 'minute');
    assert.deepEqual([minutes.totals.requests, minutes.totals.errors, minutes.totals.refused], [3, 1, 2]);

    // Counted apart when written: the rollups hold them, and the reads never look at the generations for them.
    const hourly = await gw.store.db.selectFrom('usage_hourly').select(['model', 'provider', 'requests', 'errors', 'refused']).where('hour', '=', from).where('key_id', '=', alice.id).orderBy('model').execute();
    assert.deepEqual(hourly.map((r) => [r.model, r.provider, Number(r.requests), Number(r.errors), Number(r.refused)]), [['test/model', '', 2, 1, 1], ['test/nope', '', 1, 0, 1]]);
    const daily = await gw.store.db.selectFrom('usage_daily').select((eb) => [eb.fn.sum<number>('errors').as('e'), eb.fn.sum<number>('refused').as('r')]).where('day', '=', Math.floor(from / DAY) * DAY).where('key_id', '=', alice.id).executeTakeFirstOrThrow();
    assert.deepEqual([Number(daily.e), Number(daily.r)], [1, 2]);
    const removed = await gw.store.db.deleteFrom('generations').where('key_id', '=', alice.id).where('created_at', '>=', from).where('status', '=', 'error').executeTakeFirst();
    assert.equal(Number(removed.numDeletedRows), 3);
    assert.deepEqual(await usage(alice.secret, range), plain);
    assert.deepEqual(await usage(alice.secret, { ...range, bucket: 'day', group_by: 'model' }), { ...byModel, bucket: 'day', from: new Date(Math.floor(from / DAY) * DAY).toISOString(), data: byModel.data.map((r: Json) => ({ ...r, bucket: new Date(Math.floor(from / DAY) * DAY).toISOString() })) });
  });
});

describe('histogram percentiles', () => {
  const hist = (entries: Record<number, number>) => {
    const h = new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);
    for (const [i, n] of Object.entries(entries)) h[Number(i)] = n;
    return h;
  };

  test('interpolated inside the bucket holding the rank', () => {
    assert.equal(histogramPercentiles(hist({})), null);
    // 10 requests in 0–10 ms: ranks 5, 9 and 9.9 of 10.
    assert.deepEqual(histogramPercentiles(hist({ 0: 10 })), { p50: 5, p90: 9, p99: 10 });
    // 50 in 100–200 ms, 50 in 1000–1500 ms.
    assert.deepEqual(histogramPercentiles(hist({ 4: 50, 9: 50 })), { p50: 200, p90: 1400, p99: 1490 });
    // One request in 25–50 ms: rank 0.5 of 1 is the middle.
    assert.deepEqual(histogramPercentiles(hist({ 2: 1 })), { p50: 38, p90: 48, p99: 50 });
    // The open bucket (over 120 s) reports its lower bound.
    assert.deepEqual(histogramPercentiles(hist({ 0: 1, 20: 99 })), { p50: 120000, p90: 120000, p99: 120000 });
  });
});
