/** The exact response cache (issue 13): opt-in, per-key scope, streamed replay, what is never cached. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheKey, cacheScope, cacheTtlSeconds, canonicalJson } from '../../src/cache/cache-key.js';
import { DatabaseResponseCacheStore } from '../../src/cache/database-response-cache-store.js';
import { CACHE_BYPASS_WARNING } from '../../src/pipeline/stages/response-cache.js';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { sleep } from '../helpers/poll.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any


/** Wait until the gateway's cache store holds the answer of `body` for `keyId` (stores happen after the response). */
async function untilStored(gw: TestGateway, keyId: string, body: Json, scopes: string[][] = []): Promise<void> {
  const entry = cacheKey(cacheScope(keyId, scopes), 'chat', body);
  for (let i = 0; i < 250; i++) {
    if ((await gw.gateway.runtime().cache.get(entry)) !== null) return;
    await sleep(20);
  }
  throw new Error('the answer was not stored within 5 s');
}

const answer = (content: string) => ({
  json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } },
});

describe('exact response cache', () => {
  let up: Upstream;
  let gw: TestGateway;
  let keyA: string;
  let keyB: string;
  let keyAId: string;
  let n = 0;
  /** A body no other test uses. */
  const fresh = (extra: Json = {}) => ({ model: 'test/model', messages: [{ role: 'user', content: `question ${++n}` }], ...extra });

  before(async () => {
    up = await startUpstream();
    gw = await startGateway(oneModelConfig(up.url, { root: { retention: 30 }, model: {} }));
    const a = await gw.createKey('a');
    keyA = a.secret;
    keyAId = a.id;
    keyB = (await gw.createKey('b')).secret;
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  const post = (key: string, body: Json, headers: Record<string, string> = {}) =>
    fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const record = async (id: string) => {
    await gw.flush();
    return gw.store.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  };

  test('op.cache: a miss goes upstream and is stored; the same request is a hit, recorded with cache_hit and cost 0', async () => {
    const body = fresh({ op: { cache: true } });
    up.enqueue(answer('cached words'));
    const first = await post(keyA, body);
    assert.equal(first.headers.get('x-op-cache'), 'MISS');
    const firstJson = await first.json() as Json;
    assert.equal(firstJson.choices[0].message.content, 'cached words');
    const calls = up.requests.length;
    await untilStored(gw, keyAId, body);
    const second = await post(keyA, body);
    assert.equal(second.headers.get('x-op-cache'), 'HIT');
    const json = await second.json() as Json;
    assert.equal(up.requests.length, calls, 'no upstream call for a hit');
    assert.equal(json.choices[0].message.content, 'cached words');
    assert.equal(json.choices[0].finish_reason, 'stop');
    assert.equal(json.usage.completion_tokens, 2);
    assert.notEqual(json.id, firstJson.id);
    const rec = await record(json.id);
    assert.equal(JSON.parse(rec.detail).cache_hit, true);
    assert.equal(BigInt(rec.cost_pico), 0n);
    assert.equal(rec.status, 'success');
    assert.equal(rec.served_model, 'test/model');
    assert.notEqual(BigInt((await record(firstJson.id)).cost_pico), 0n);
    const api = await (await fetch(`${gw.baseURL}/generation?id=${json.id}`, { headers: { authorization: `Bearer ${keyA}` } })).json() as Json;
    assert.equal(api.data.cache_hit, true);
    assert.equal(api.data.total_cost, 0);
    assert.equal(api.data.total_cost_usd, '0');
    const missApi = await (await fetch(`${gw.baseURL}/generation?id=${firstJson.id}`, { headers: { authorization: `Bearer ${keyA}` } })).json() as Json;
    assert.equal(missApi.data.cache_hit, false);
  });

  test('a streamed request replays the cached answer as a stream', async () => {
    const body = fresh();
    up.enqueue(answer('replayed as a stream'));
    await (await post(keyA, body, { 'x-op-cache': 'true' })).text();
    await untilStored(gw, keyAId, body);
    const calls = up.requests.length;
    const res = await post(keyA, { ...body, stream: true }, { 'x-op-cache': 'true' });
    assert.equal(res.headers.get('x-op-cache'), 'HIT');
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const text = await res.text();
    assert.equal(up.requests.length, calls);
    const events = text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Json);
    assert.equal(chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join(''), 'replayed as a stream');
    assert.equal(chunks.find((c) => c.choices?.[0]?.finish_reason)?.choices[0].finish_reason, 'stop');
    assert.equal(chunks.at(-1)!.usage.completion_tokens, 2);
  });

  test('a /v1/responses hit is stored like a live answer: GET by its id and previous_response_id find it', async () => {
    const body = { model: 'test/model', input: `responses question ${++n}` };
    const send = (b: Json) => fetch(`${gw.baseURL}/responses`, { method: 'POST', headers: { authorization: `Bearer ${keyA}`, 'content-type': 'application/json', 'x-op-cache': 'true' }, body: JSON.stringify(b) });
    up.enqueue(answer('kept from the cache'));
    assert.equal((await send(body)).headers.get('x-op-cache'), 'MISS');
    const entry = cacheKey(cacheScope(keyAId, []), 'responses', body);
    for (let i = 0; i < 250 && (await gw.gateway.runtime().cache.get(entry)) === null; i++) await sleep(20);
    const hit = await send(body);
    assert.equal(hit.headers.get('x-op-cache'), 'HIT');
    const json = await hit.json() as Json;
    assert.equal(json.store, true);
    const got = await fetch(`${gw.baseURL}/responses/${json.id}`, { headers: { authorization: `Bearer ${keyA}` } });
    assert.equal(got.status, 200);
    assert.equal(((await got.json()) as Json).id, json.id);
    up.enqueue(answer('a follow-up'));
    const next = await fetch(`${gw.baseURL}/responses`, { method: 'POST', headers: { authorization: `Bearer ${keyA}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', input: 'and then?', previous_response_id: json.id }) });
    assert.equal(next.status, 200);
  });

  test('DELETE /v1/responses/{id} removes its text everywhere: the stored response, the record\'s text, the cache entry it made or came from', async () => {
    const headers = { authorization: `Bearer ${keyA}`, 'content-type': 'application/json', 'x-op-cache': 'true' };
    const send = (b: Json) => fetch(`${gw.baseURL}/responses`, { method: 'POST', headers, body: JSON.stringify(b) });
    const del = (id: string) => fetch(`${gw.baseURL}/responses/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${keyA}` } });
    const textOf = async (id: string) => {
      await gw.flush();
      return (await gw.store.db.selectFrom('generations').select(['content', 'status']).where('id', '=', id).executeTakeFirstOrThrow());
    };
    for (const stream of [false, true]) {
      const body = { model: 'test/model', input: `delete me ${stream} ${++n}` };
      const entry = cacheKey(cacheScope(keyAId, []), 'responses', body);
      up.enqueue(stream ? { sse: [JSON.stringify({ choices: [{ index: 0, delta: { content: 'forget this text' }, finish_reason: 'stop' }], usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } })] } : answer('forget this text'));
      const live = await send({ ...body, stream });
      assert.equal(live.headers.get('x-op-cache'), 'MISS');
      const id = live.headers.get('x-op-generation-id')!;
      assert.match(await live.text(), /forget this text/);
      // The entry exists once the stored response can be found (it is written first).
      assert.match((await gw.gateway.runtime().cache.get(entry)) ?? '', /forget this text/, `stream ${stream}`);
      // Deleted at once, while its record may still be queued.
      const gone = await del(id);
      assert.equal(gone.status, 200);
      assert.deepEqual(await gone.json(), { id, object: 'response', deleted: true });
      assert.equal(await gw.gateway.runtime().cache.get(entry), null, 'the cache entry it made is gone');
      assert.equal((await fetch(`${gw.baseURL}/responses/${id}`, { headers: { authorization: `Bearer ${keyA}` } })).status, 404);
      const rec = await textOf(id);
      assert.equal(rec.content, null, 'the record keeps no text');
      assert.equal(rec.status, 'success', 'the record itself stays');
      assert.equal((await del(id)).status, 404);
    }

    // A hit: deleting it deletes the entry it was answered from.
    const body = { model: 'test/model', input: `delete the hit ${++n}` };
    const entry = cacheKey(cacheScope(keyAId, []), 'responses', body);
    up.enqueue(answer('cached then deleted'));
    await (await send(body)).text();
    const hit = await send(body);
    assert.equal(hit.headers.get('x-op-cache'), 'HIT');
    const hitId = ((await hit.json()) as Json).id as string;
    assert.match((await textOf(hitId)).content ?? '', /cached then deleted/);
    assert.equal((await del(hitId)).status, 200);
    assert.equal(await gw.gateway.runtime().cache.get(entry), null);
    assert.equal((await textOf(hitId)).content, null);
    up.enqueue(answer('asked again'));
    const again = await send(body);
    assert.equal(again.headers.get('x-op-cache'), 'MISS');
    assert.match(await again.text(), /asked again/);
  });

  test('two keys: a key never sees another key\'s cached answer', async () => {
    const body = fresh({ op: { cache: true } });
    up.enqueue(answer('for key a'));
    await (await post(keyA, body)).text();
    await untilStored(gw, keyAId, body);
    up.enqueue(answer('for key b'));
    const res = await post(keyB, body);
    assert.equal(res.headers.get('x-op-cache'), 'MISS');
    assert.equal(((await res.json()) as Json).choices[0].message.content, 'for key b');
  });

  test('without asking, nothing is cached and no header is sent', async () => {
    const body = fresh();
    up.enqueue(answer('one'), answer('two'));
    const first = await post(keyA, body);
    assert.equal(first.headers.get('x-op-cache'), null);
    await first.text();
    const second = await post(keyA, body);
    assert.equal(((await second.json()) as Json).choices[0].message.content, 'two');
  });

  test('retention none is never cached: an explicit ask is answered x-op-cache: BYPASS, and the record says why', async () => {
    const body = fresh({ op: { cache: true, retention: 'none' } });
    up.enqueue(answer('secret one'), answer('secret two'));
    const first = await post(keyA, body);
    assert.equal(first.headers.get('x-op-cache'), 'BYPASS');
    await first.text();
    await sleep(200);
    const res = await post(keyA, body);
    assert.equal(res.headers.get('x-op-cache'), 'BYPASS');
    const json = await res.json() as Json;
    assert.equal(json.choices[0].message.content, 'secret two');
    assert.deepEqual(JSON.parse((await record(json.id)).detail).warnings, [CACHE_BYPASS_WARNING]);
    // The header form, streamed; /v1/generation shows the warning.
    up.enqueue(answer('secret three'));
    const streamed = await post(keyA, fresh({ op: { retention: 'none' }, stream: true }), { 'x-op-cache': 'true' });
    assert.equal(streamed.headers.get('x-op-cache'), 'BYPASS');
    await streamed.text();
    const id = streamed.headers.get('x-op-generation-id')!;
    await gw.flush();
    const api = await (await fetch(`${gw.baseURL}/generation?id=${id}`, { headers: { authorization: `Bearer ${keyA}` } })).json() as Json;
    assert.deepEqual(api.data.warnings, [CACHE_BYPASS_WARNING]);
    // Not asked by the request (no op.cache, no header): nothing to bypass, no header.
    up.enqueue(answer('secret four'));
    const plain = await post(keyA, fresh({ op: { retention: 'none' } }));
    assert.equal(plain.headers.get('x-op-cache'), null);
    assert.deepEqual(JSON.parse((await record(((await plain.json()) as Json).id)).detail).warnings, []);
  });

  test('errors and partial streams are never cached', async () => {
    const body = fresh({ op: { cache: true } });
    up.enqueue({ status: 400, json: { error: { message: 'bad' } } });
    assert.equal((await post(keyA, body)).status, 400);
    up.enqueue(answer('after the error'));
    const res = await post(keyA, body);
    assert.equal(res.headers.get('x-op-cache'), 'MISS');
    assert.equal(((await res.json()) as Json).choices[0].message.content, 'after the error');

    const streamed = fresh({ op: { cache: true }, stream: true });
    up.enqueue({ sse: [JSON.stringify({ choices: [{ index: 0, delta: { content: 'cut ' }, finish_reason: null }] })], destroyAfterBytes: 80 });
    await (await post(keyA, streamed)).text();
    await sleep(200);
    up.enqueue({ sse: [JSON.stringify({ choices: [{ index: 0, delta: { content: 'whole' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })] });
    const again = await post(keyA, streamed);
    assert.equal(again.headers.get('x-op-cache'), 'MISS');
    assert.match(await again.text(), /whole/);
  });

  test('an unreadable entry is a miss: the upstream answers and the entry is replaced', async () => {
    const created = await gw.createKey('corrupt');
    const body = fresh({ op: { cache: true } });
    const entry = cacheKey(cacheScope(created.id, []), 'chat', body);
    await gw.store.db.insertInto('response_cache').values({ cache_key: entry, value: '{"v":1,"result":"not an object"', size_bytes: 10, created_at: Date.now(), expires_at: Date.now() + 60_000 }).execute();
    up.enqueue(answer('fresh answer'));
    const res = await post(created.secret, body);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-op-cache'), 'MISS');
    assert.equal(((await res.json()) as Json).choices[0].message.content, 'fresh answer');
    for (let i = 0; i < 250 && !((await gw.gateway.runtime().cache.get(entry)) ?? '').includes('fresh answer'); i++) await sleep(20);
    const again = await post(created.secret, body);
    assert.equal(again.headers.get('x-op-cache'), 'HIT');
    assert.equal(((await again.json()) as Json).choices[0].message.content, 'fresh answer');
  });

  test('cache key, scope and TTL rules', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 2 }], c: null } }), '{"a":{"c":null,"d":[2,{"e":2,"f":1}]},"b":1}');
    const body = { model: 'm', messages: [{ role: 'user', content: 'x' }] };
    assert.equal(cacheKey('key:1', 'chat', { ...body, stream: true, op: { cache: true } }), cacheKey('key:1', 'chat', { messages: body.messages, model: 'm' }));
    assert.notEqual(cacheKey('key:1', 'chat', body), cacheKey('key:2', 'chat', body));
    assert.notEqual(cacheKey('key:1', 'chat', body), cacheKey('key:1', 'completions', body));
    assert.notEqual(cacheKey('key:1', 'chat', body), cacheKey('key:1', 'chat', { ...body, provider: { order: ['x'] } }));
    // A forwarded header that changes the answer (anthropic-beta) is part of the key; none sent is the body alone.
    assert.notEqual(cacheKey('key:1', 'messages', body, { 'anthropic-beta': 'interleaved-thinking-2025-05-14' }), cacheKey('key:1', 'messages', body));
    assert.equal(cacheKey('key:1', 'messages', body, {}), cacheKey('key:1', 'messages', body));
    assert.equal(cacheScope('k1', [['k1', 'k2']]), cacheScope('k2', [['k1', 'k2']]));
    assert.equal(cacheScope('k3', [['k1', 'k2']]), 'key:k3');
    assert.equal(cacheTtlSeconds({ request: true, requestTtl: 10, key: null, model: undefined }, false, 300, 3600), 10);
    assert.equal(cacheTtlSeconds({ request: true, requestTtl: 99999, key: null, model: undefined }, false, 300, 3600), 3600);
    assert.equal(cacheTtlSeconds({ request: undefined, requestTtl: undefined, key: 60, model: undefined }, false, 300, 3600), 60);
    assert.equal(cacheTtlSeconds({ request: undefined, requestTtl: undefined, key: null, model: true }, false, 300, 3600), 300);
    assert.equal(cacheTtlSeconds({ request: false, requestTtl: undefined, key: true, model: true }, false, 300, 3600), undefined);
    assert.equal(cacheTtlSeconds({ request: true, requestTtl: undefined, key: null, model: undefined }, true, 300, 3600), undefined);
  });
});

describe('response cache settings: per key (admin API), per model, shared scopes, rate limits, Redis', () => {
  let up: Upstream;
  let gw: TestGateway;
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gw.baseURL}${path}`, { method, headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: await res.json() as Json };
  };
  const post = (key: string, body: Json) =>
    fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  let shared1 = '';
  let shared2 = '';
  let sharedIds: string[] = [];

  before(async () => {
    up = await startUpstream();
    const base = oneModelConfig(up.url, { root: { retention: 30 } });
    const config = {
      ...base,
      models: [...base.models, { ...base.models[0]!, id: 'test/cached', cache: 120 }],
    };
    gw = await startGateway({ ...config, cache: { shared_scopes: [['placeholder-1', 'placeholder-2']] } }, { redisUrl: process.env.OP_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379' });
    const a = await gw.createKey('s1');
    const b = await gw.createKey('s2');
    shared1 = a.secret;
    shared2 = b.secret;
    sharedIds = [a.id, b.id];
    // Key ids exist only once created: put the two keys in one shared scope by a config reload.
    const { parseConfig } = await import('../../src/config/load.js');
    gw.gateway.reload({ config: parseConfig({ ...config, routing: { circuit_breaker: { failure_threshold: 1000 }, retry_after_cap_ms: 0, recent_failure_ms: 0 }, cache: { shared_scopes: [[a.id, b.id]] } }, 'test'), source: 'test' });
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  const unique = () => `q ${Date.now()} ${Math.random()}`;

  test('a key with cache: true (admin API) caches without asking; the answers live in Redis', async () => {
    const created = await admin('POST', '/keys', { name: 'cached-key', cache: 60 });
    assert.equal(created.status, 201);
    assert.equal(created.body.data.cache, 60);
    const secret = created.body.key as string;
    const body = { model: 'test/model', messages: [{ role: 'user', content: unique() }] };
    up.enqueue(answer('key-level'));
    const first = await post(secret, body);
    assert.equal(first.headers.get('x-op-cache'), 'MISS');
    await first.text();
    await untilStored(gw, created.body.data.id as string, body);
    const second = await post(secret, body);
    assert.equal(second.headers.get('x-op-cache'), 'HIT');
    assert.equal(((await second.json()) as Json).choices[0].message.content, 'key-level');
    const { Redis } = await import('ioredis');
    const redis = new Redis(process.env.OP_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
    try {
      // Under the gateway's Redis prefix (OP_REDIS_PREFIX; each test gateway has its own).
      const prefix = gw.gateway.runtime().redis!.prefix;
      const entry = `${prefix}cache:${cacheKey(cacheScope(created.body.data.id as string, []), 'chat', body)}`;
      assert.match((await redis.get(entry)) ?? '', /key-level/);
      const ttl = await redis.pttl(entry);
      assert.ok(ttl > 50_000 && ttl <= 60_000, `the key's TTL (60 s), got ${ttl} ms`);
    } finally {
      redis.disconnect();
    }
  });

  test('a model with cache in config caches every request to it', async () => {
    const modelKey = await gw.createKey('m');
    const secret = modelKey.secret;
    const body = { model: 'test/cached', messages: [{ role: 'user', content: unique() }] };
    up.enqueue(answer('model-level'));
    await (await post(secret, body)).text();
    await untilStored(gw, modelKey.id, body);
    const res = await post(secret, body);
    assert.equal(res.headers.get('x-op-cache'), 'HIT');
    const other = { model: 'test/model', messages: body.messages };
    up.enqueue(answer('not cached'));
    assert.equal((await post(secret, other)).headers.get('x-op-cache'), null);
  });

  test('keys in one shared scope see each other\'s answers', async () => {
    const body = { model: 'test/model', messages: [{ role: 'user', content: unique() }], op: { cache: true } };
    up.enqueue(answer('shared answer'));
    await (await post(shared1, body)).text();
    await untilStored(gw, sharedIds[0]!, body, [sharedIds]);
    const res = await post(shared2, body);
    assert.equal(res.headers.get('x-op-cache'), 'HIT');
    assert.equal(((await res.json()) as Json).choices[0].message.content, 'shared answer');
  });

  test('hits count for rate limits', async () => {
    const created = await admin('POST', '/keys', { name: 'rpm', rate_limit: { requests_per_minute: 2 } });
    const secret = created.body.key as string;
    const body = { model: 'test/model', messages: [{ role: 'user', content: unique() }], op: { cache: true } };
    up.enqueue(answer('limited'));
    assert.equal((await post(secret, body)).status, 200);
    await untilStored(gw, created.body.data.id as string, body);
    const hit = await post(secret, body);
    assert.equal(hit.headers.get('x-op-cache'), 'HIT');
    const third = await post(secret, body);
    assert.equal(third.status, 429);
  });
});

test('database store: TTL, entry size bound, total size bound (oldest evicted first)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'op-cache-'));
  const store = openDatabase(`sqlite:${join(dir, 'cache.db')}`);
  try {
    await migrate(store.db);
    let now = 1_000_000;
    const cache = new DatabaseResponseCacheStore(store.db, { maxEntryBytes: 2000, maxTotalBytes: 4000 }, () => now);
    await cache.set('a', 'x'.repeat(1000), 10_000);
    assert.equal(await cache.get('a'), 'x'.repeat(1000));
    now += 10_000;
    assert.equal(await cache.get('a'), null, 'expired at its TTL');
    await cache.set('big', 'y'.repeat(2001), 10_000);
    assert.equal(await cache.get('big'), null, 'larger than max_entry_bytes: not stored');
    for (const k of ['k1', 'k2', 'k3', 'k4']) {
      now += 1;
      await cache.set(k, 'z'.repeat(1500), 60_000);
    }
    assert.equal(await cache.get('k1'), null, 'oldest evicted');
    assert.equal(await cache.get('k2'), null);
    assert.equal(await cache.get('k4'), 'z'.repeat(1500));
    const total = await store.db.selectFrom('response_cache').select((eb) => eb.fn.sum<number>('size_bytes').as('t')).executeTakeFirstOrThrow();
    assert.ok(Number(total.t) <= 4000, `total ${total.t} within the bound`);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Redis store: an entry larger than max_entry_bytes is not stored; others live their TTL', async () => {
  const { RedisConnection } = await import('../../src/redis/redis-connection.js');
  const { RedisResponseCacheStore } = await import('../../src/cache/redis-response-cache-store.js');
  const quiet = { error() {}, warn() {}, info() {} };
  const connection = new RedisConnection(process.env.OP_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', { commandTimeoutMs: 2000, connectTimeoutMs: 2000 }, quiet);
  await connection.waitUntilReady();
  const redis = connection.client;
  const prefix = `op-test:${process.pid}:${Date.now()}:`;
  try {
    const store = new RedisResponseCacheStore(connection, { maxEntryBytes: 100, maxTotalBytes: 1000 }, prefix);
    await store.set('big', 'x'.repeat(101), 60_000);
    assert.equal(await store.get('big'), null);
    await store.set('small', 'y'.repeat(100), 60_000);
    assert.equal(await store.get('small'), 'y'.repeat(100));
    const ttl = await redis.pttl(`${prefix}small`);
    assert.ok(ttl > 55_000 && ttl <= 60_000, `ttl ${ttl}`);
    await store.delete('small');
    assert.equal(await redis.exists(`${prefix}small`), 0);
    await store.delete('never-stored');
  } finally {
    await redis.del(`${prefix}small`);
    await connection.close();
  }
});

test('a key id in two shared_scopes groups is refused at load, naming both groups', async () => {
  const { parseConfig } = await import('../../src/config/load.js');
  const config = oneModelConfig('http://127.0.0.1:9', { root: {}, model: {} });
  assert.throws(() => parseConfig({ ...config, cache: { shared_scopes: [['k1', 'k2'], ['k3', 'k2']] } }, 'test'), /cache\.shared_scopes\[1\]\[1\]: key k2 is in shared_scopes groups 0 and 1; a key may be in one group only/);
  assert.deepEqual(parseConfig({ ...config, cache: { shared_scopes: [['k1', 'k2'], ['k3', 'k4']] } }, 'test').cache.shared_scopes, [['k1', 'k2'], ['k3', 'k4']]);
});

/**
 * Issue 18 §3: a hit never returns what the key could not get live now. The entry's key is the
 * request body, so the same body can reach an entry answered by a model or provider this key,
 * today, may not use: a shared scope, a narrowed `allowed_models`, or `models` / `provider` as a
 * preset now resolves them. Each such lookup is a miss, and the live answer comes from what the
 * request may reach.
 */
describe('response cache × permissions: a hit only from what the key could get live', () => {
  let up1: Upstream;
  let up2: Upstream;
  let gw: TestGateway;
  let config: Json;
  let open: { secret: string; id: string };
  let onlyA: { secret: string; id: string };
  let scopes: string[][];
  let n = 0;
  const unique = () => [{ role: 'user', content: `permission question ${++n} ${Date.now()}` }];
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gw.baseURL}${path}`, { method, headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: await res.json() as Json };
  };
  const post = async (key: string, body: Json) => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = await res.json() as Json;
    return { status: res.status, cache: res.headers.get('x-op-cache'), content: json.choices?.[0]?.message?.content as string | undefined, model: json.model as string | undefined };
  };
  const reload = async (change: (c: Json) => void) => {
    change(config);
    const { parseConfig } = await import('../../src/config/load.js');
    gw.gateway.reload({ config: parseConfig(config, 'test'), source: 'test' });
  };
  const endpoint = (provider: string, upstream: string) => ({ provider, upstream_model: upstream, pricing: { prompt: 1, completion: 2 } });

  before(async () => {
    up1 = await startUpstream();
    up2 = await startUpstream();
    config = {
      retention: 30,
      routing: { circuit_breaker: { failure_threshold: 1000 }, retry_after_cap_ms: 0, recent_failure_ms: 0 },
      providers: [{ id: 'p1', kind: 'openai', base_url: up1.url, api_key: 'sk-1' }, { id: 'p2', kind: 'openai', base_url: up2.url, api_key: 'sk-2' }],
      models: [
        { id: 't/a', context_length: 8192, endpoints: [endpoint('p1', 'a')] },
        { id: 't/b', context_length: 8192, endpoints: [endpoint('p1', 'b')] },
        { id: 't/c', context_length: 8192, endpoints: [endpoint('p1', 'c'), endpoint('p2', 'c')] },
      ],
      presets: [
        { slug: 'chain', models: ['t/a', 't/b'] },
        { slug: 'pin', provider: { only: ['p1'] } },
        { slug: 'skip', provider: { ignore: ['p2'] } },
      ],
    };
    gw = await startGateway(config);
    const made = async (name: string, allowed: string[]) => {
      const r = await admin('POST', '/keys', { name, allowed_models: allowed });
      assert.equal(r.status, 201);
      return { secret: r.body.key as string, id: r.body.data.id as string };
    };
    open = await made('open', []);
    onlyA = await made('only-a', ['t/a']);
    // The two keys share their cache scope (ids exist only once created: a config reload).
    scopes = [[open.id, onlyA.id]];
    await reload((c) => { c.cache = { shared_scopes: scopes }; });
  });
  after(async () => {
    await gw.close();
    await up1.close();
    await up2.close();
  });

  test('shared scope: a key allowed only t/a never gets the t/b answer another key stored; t/a answers are still shared', async () => {
    const body = { model: 't/a', models: ['t/b'], messages: unique(), op: { cache: true } };
    up1.enqueue({ status: 500, json: { error: { message: 't/a is down' } } }, answer('answer of t/b'));
    const first = await post(open.secret, body);
    assert.equal(first.content, 'answer of t/b');
    assert.equal(first.model, 't/b');
    await untilStored(gw, open.id, body, scopes);
    up1.enqueue(answer('answer of t/a'));
    const scoped = await post(onlyA.secret, body);
    assert.equal(scoped.status, 200);
    assert.equal(scoped.cache, 'MISS', 'the stored answer is t/b\'s, which this key may not use');
    assert.equal(scoped.content, 'answer of t/a');
    assert.equal(scoped.model, 't/a');
    // The live t/a answer replaced the entry: both keys may have it.
    const entry = cacheKey(cacheScope(open.id, scopes), 'chat', body);
    for (let i = 0; i < 250 && !((await gw.gateway.runtime().cache.get(entry)) ?? '').includes('answer of t/a'); i++) await sleep(20);
    const calls = up1.requests.length;
    for (const key of [onlyA.secret, open.secret]) {
      const hit = await post(key, body);
      assert.equal(hit.cache, 'HIT');
      assert.equal(hit.content, 'answer of t/a');
    }
    assert.equal(up1.requests.length, calls);
  });

  test('allowed_models narrowed after the entry was stored: the entry of the model taken away is a miss', async () => {
    const r = await admin('POST', '/keys', { name: 'narrowed', allowed_models: ['t/a', 't/b'] });
    const key = { secret: r.body.key as string, id: r.body.data.id as string };
    const body = { model: 't/a', models: ['t/b'], messages: unique(), op: { cache: true } };
    up1.enqueue({ status: 500, json: { error: { message: 't/a is down' } } }, answer('stored from t/b'));
    assert.equal((await post(key.secret, body)).content, 'stored from t/b');
    await untilStored(gw, key.id, body);
    assert.equal((await post(key.secret, body)).cache, 'HIT', 'a hit while t/b is allowed');
    assert.equal((await admin('PATCH', `/keys/${key.id}`, { allowed_models: ['t/a'] })).status, 200);
    up1.enqueue(answer('live from t/a'));
    const after = await post(key.secret, body);
    assert.equal(after.cache, 'MISS');
    assert.equal(after.content, 'live from t/a');
    assert.equal(after.model, 't/a');
  });

  test('models as a preset resolves them: an entry answered by a fallback the preset no longer lists is a miss', async () => {
    const body = { model: '@preset/chain', messages: unique(), op: { cache: true } };
    up1.enqueue({ status: 500, json: { error: { message: 't/a is down' } } }, answer('fallback t/b'));
    assert.equal((await post(open.secret, body)).content, 'fallback t/b');
    await untilStored(gw, open.id, body, scopes);
    assert.equal((await post(open.secret, body)).cache, 'HIT');
    await reload((c) => { c.presets[0].models = ['t/a']; });
    up1.enqueue(answer('only t/a now'));
    const after = await post(open.secret, body);
    assert.equal(after.cache, 'MISS');
    assert.equal(after.content, 'only t/a now');
  });

  test('provider.only as applied: an entry answered by a provider no longer in only is a miss', async () => {
    const body = { model: 't/c@preset/pin', messages: unique(), op: { cache: true } };
    up1.enqueue(answer('from p1'));
    assert.equal((await post(open.secret, body)).content, 'from p1');
    await untilStored(gw, open.id, body, scopes);
    assert.equal((await post(open.secret, body)).cache, 'HIT');
    await reload((c) => { c.presets[1].provider = { only: ['p2'] }; });
    up2.enqueue(answer('from p2'));
    const after = await post(open.secret, body);
    assert.equal(after.cache, 'MISS');
    assert.equal(after.content, 'from p2');
  });

  test('provider.ignore as applied: an entry answered by a provider now ignored is a miss', async () => {
    const body = { model: 't/c@preset/skip', messages: unique(), op: { cache: true } };
    up1.enqueue(answer('p1 before'));
    assert.equal((await post(open.secret, body)).content, 'p1 before');
    await untilStored(gw, open.id, body, scopes);
    assert.equal((await post(open.secret, body)).cache, 'HIT');
    await reload((c) => { c.presets[2].provider = { ignore: ['p1'] }; });
    up2.enqueue(answer('p2 after'));
    const after = await post(open.secret, body);
    assert.equal(after.cache, 'MISS');
    assert.equal(after.content, 'p2 after');
  });
});
