/**
 * Teams and end users (issue 23 items 1 and 2): the `/v1/teams` API, a team's budget, rate
 * limits, allowed models and retention over the sum of its keys (in one process, and through two
 * gateways sharing Redis and the database), refusals naming their level, end-user caps, and
 * usage by team and by user.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../src/config/load.js';
import { buildGateway, type Gateway } from '../../src/server/app.js';
import type { OpenDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { randomId } from '../../src/util/ids.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { createTestDatabase } from '../helpers/test-database.js';
import { redisReachable, TEST_REDIS_URL } from '../helpers/redis.js';
import { gatewayLogStream } from '../helpers/test-output.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const noRedis = (await redisReachable()) ? false : `Redis is not reachable at ${TEST_REDIS_URL} (set OP_TEST_REDIS_URL)`;

const completion = (prompt: number, completionTokens: number) => ({
  json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens } },
});

// $1000 per 1M tokens both ways: one token costs exactly $0.001.
const pricey = (url: string) => oneModelConfig(url, { endpoint: { pricing: { prompt: 1000, completion: 1000 }, max_completion_tokens: 4096 } });

const call = async (origin: string, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${origin}/v1${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
};
const chat = (extra: Record<string, unknown> = {}) => ({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }], ...extra });

describe('the teams API', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(pricey(upstream.url));
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  test('create, list, get, update, delete; keys join a team by name or id; deleting a team detaches its keys', async () => {
    const admin = (m: string, p: string, b?: unknown) => call(gw.origin, gw.adminKey, m, p, b);
    const created = await admin('POST', '/teams', { name: 'research', limit: 2.5, limit_reset: 'monthly', rate_limit: { requests_per_minute: 100 }, allowed_models: ['test/model'], retention: 7 });
    assert.equal(created.status, 201);
    const team = created.body.data;
    assert.match(team.id, /^team_/);
    assert.deepEqual(
      { name: team.name, limit: team.limit, limit_reset: team.limit_reset, rate_limit: team.rate_limit, allowed_models: team.allowed_models, retention: team.retention, keys: team.keys, usage: team.usage, limit_remaining: team.limit_remaining },
      { name: 'research', limit: '2.5', limit_reset: 'monthly', rate_limit: { requests_per_minute: 100, tokens_per_minute: null }, allowed_models: ['test/model'], retention: 7, keys: [], usage: '0', limit_remaining: '2.5' },
    );
    const key = await admin('POST', '/keys', { name: 'member', team: 'research' });
    assert.equal(key.status, 201);
    assert.equal(key.body.data.team, team.id);
    const other = await admin('POST', '/keys', { name: 'loner' });
    const joined = await admin('PATCH', `/keys/${other.body.data.id}`, { team: team.id });
    assert.equal(joined.body.data.team, team.id);
    const got = await admin('GET', `/teams/${team.id}`);
    assert.deepEqual([...got.body.data.keys].sort(), [key.body.data.id, other.body.data.id].sort());
    const patched = await admin('PATCH', `/teams/${team.id}`, { limit: null, rate_limit: { tokens_per_minute: 5000 } });
    assert.equal(patched.body.data.limit, null);
    assert.deepEqual(patched.body.data.rate_limit, { requests_per_minute: 100, tokens_per_minute: 5000 });
    assert.equal(patched.body.data.limit_remaining, null);
    const list = await admin('GET', '/teams');
    assert.deepEqual(list.body.data.map((t: Json) => t.name), ['research']);
    const left = await admin('PATCH', `/keys/${other.body.data.id}`, { team: null });
    assert.equal(left.body.data.team, null);
    const deleted = await admin('DELETE', `/teams/${team.id}`);
    assert.deepEqual(deleted.body.data, { id: team.id, deleted: true, keys_detached: 1 });
    assert.equal((await admin('GET', `/keys/${key.body.data.id}`)).body.data.team, null);
    assert.equal((await admin('GET', `/teams/${team.id}`)).status, 404);
  });

  test('validation: code and param; the admin key is required', async () => {
    const admin = (m: string, p: string, b?: unknown) => call(gw.origin, gw.adminKey, m, p, b);
    const cases: [unknown, string][] = [
      [{}, 'name'],
      [{ name: 'x', limit: 0.0000001 }, 'limit'],
      [{ name: 'x', colour: 'red' }, 'colour'],
      [{ name: 'x', allowed_models: ['no/such'] }, 'allowed_models[0]'],
      [{ name: 'x', rate_limit: { requests_per_minute: 0 } }, 'rate_limit.requests_per_minute'],
      [{ name: 'x', limit_reset: 'hourly' }, 'limit_reset'],
    ];
    for (const [body, param] of cases) {
      const r = await admin('POST', '/teams', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.code, 'invalid_request');
      assert.equal(r.body.error.param, param, JSON.stringify(body));
    }
    assert.equal((await admin('POST', '/teams', { name: 'dup' })).status, 201);
    const dup = await admin('POST', '/teams', { name: 'dup' });
    assert.deepEqual([dup.status, dup.body.error.param], [400, 'name']);
    const noTeam = await admin('POST', '/keys', { name: 'k', team: 'nobody' });
    assert.deepEqual([noTeam.status, noTeam.body.error.code, noTeam.body.error.param], [400, 'invalid_request', 'team']);
    const { secret } = await gw.createKey('plain');
    const forbidden = await call(gw.origin, secret, 'GET', '/teams');
    assert.deepEqual([forbidden.status, forbidden.body.error.code], [403, 'admin_key_required']);
  });
});

describe('team limits in one gateway', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(pricey(upstream.url));
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });
  const admin = (m: string, p: string, b?: unknown) => call(gw.origin, gw.adminKey, m, p, b);
  const teamWithKeys = async (team: Record<string, unknown>, keys: Record<string, unknown>[] = [{}, {}]) => {
    const t = (await admin('POST', '/teams', { name: `t-${randomId(6)}`, ...team })).body.data;
    const secrets: string[] = [];
    for (const k of keys) secrets.push((await admin('POST', '/keys', { name: 'member', team: t.id, ...k })).body.key as string);
    return { team: t, secrets };
  };

  test('allowed models narrow the keys\'; a refusal names its level', async () => {
    const { secrets } = await teamWithKeys({ allowed_models: ['test/model'] }, [{}]);
    const refused = await call(gw.origin, secrets[0]!, 'POST', '/chat/completions', chat({ model: 'other/model' }));
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, 'model_not_allowed');
    assert.deepEqual(refused.body.error.metadata, { level: 'team' });
    assert.match(refused.body.error.message, /^this key's team may not use model "other\/model"/);
  });

  test('requests per minute over the sum of the keys: 12 parallel requests through two keys, a team limit of 5, exactly 5 pass', async () => {
    const { secrets } = await teamWithKeys({ rate_limit: { requests_per_minute: 5 } });
    upstream.setDefault(completion(1, 1));
    try {
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => call(gw.origin, secrets[i % 2]!, 'POST', '/chat/completions', chat())));
      assert.equal(results.filter((r) => r.status === 200).length, 5);
      const limited = results.filter((r) => r.status === 429);
      assert.equal(limited.length, 7);
      assert.deepEqual(limited[0]!.body.error.metadata, { level: 'team' });
      assert.match(limited[0]!.body.error.message, /^rate limit of 5 requests per minute reached for this key's team/);
      assert.equal(limited[0]!.headers.get('x-ratelimit-limit-requests'), '5');
    } finally {
      upstream.setDefault(undefined);
    }
  });

  test('tokens per minute over the sum of the keys: the tokens of one key\'s request count for the other', async () => {
    const { secrets } = await teamWithKeys({ rate_limit: { tokens_per_minute: 10 } });
    upstream.enqueue(completion(8, 4));
    const first = await call(gw.origin, secrets[0]!, 'POST', '/chat/completions', chat());
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-ratelimit-limit-tokens'), '10');
    await new Promise((r) => setTimeout(r, 20)); // the tokens are added after the answer
    const second = await call(gw.origin, secrets[1]!, 'POST', '/chat/completions', chat());
    assert.equal(second.status, 429);
    assert.deepEqual(second.body.error.metadata, { level: 'team' });
    assert.match(second.body.error.message, /^rate limit of 10 tokens per minute reached for this key's team/);
  });

  test('a key limit refuses before the team\'s, with level key', async () => {
    const { secrets } = await teamWithKeys({ rate_limit: { requests_per_minute: 100 } }, [{ rate_limit: { requests_per_minute: 1 } }]);
    upstream.setDefault(completion(1, 1));
    try {
      assert.equal((await call(gw.origin, secrets[0]!, 'POST', '/chat/completions', chat())).status, 200);
      const second = await call(gw.origin, secrets[0]!, 'POST', '/chat/completions', chat());
      assert.equal(second.status, 429);
      assert.deepEqual(second.body.error.metadata, { level: 'key' });
    } finally {
      upstream.setDefault(undefined);
    }
  });

  test('a budget over the sum of the keys: 20 parallel requests through two keys, room for 3 worst cases; usage by team', async () => {
    // Worst case of each: (estimated prompt + 100 output tokens) × $0.001 ≈ $0.107; $0.34 covers exactly 3 at once.
    const { team, secrets } = await teamWithKeys({ limit: '0.34' });
    upstream.setDefault({ ...completion(11, 1), delayBeforeHeadersMs: 300 });
    try {
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => call(gw.origin, secrets[i % 2]!, 'POST', '/chat/completions', chat({ max_tokens: 100 }))));
      assert.equal(results.filter((r) => r.status === 200).length, 3);
      const refused = results.filter((r) => r.status === 402);
      assert.equal(refused.length, 17);
      assert.equal(refused[0]!.body.error.code, 'insufficient_credits');
      assert.equal(refused[0]!.body.error.metadata.level, 'team');
      assert.match(refused[0]!.body.error.message, /but the key's team can only afford \d+$/);
    } finally {
      upstream.setDefault(undefined);
    }
    await gw.flush();
    const got = await admin('GET', `/teams/${team.id}`);
    assert.equal(got.body.data.usage, '0.036'); // 3 × 12 tokens × $0.001
    assert.equal(got.body.data.limit_remaining, '0.304');
    const usage = await admin('GET', `/usage?group_by=team&bucket=day`);
    const mine = usage.body.data.filter((r: Json) => r.group === team.id);
    assert.equal(mine.length, 1);
    assert.equal(mine[0].cost, '0.036');
    assert.equal(mine[0].requests, 20);
    const filtered = await admin('GET', `/usage?team=${team.id}`);
    assert.equal(filtered.body.totals.requests, 20);
    assert.equal(filtered.body.totals.refused, 17);
    assert.equal(filtered.body.totals.cost, '0.036');
  });

  test('the team\'s retention is its keys\' default: retention none keeps no text and hashes the end user', async () => {
    const { secrets } = await teamWithKeys({ retention: 'none' }, [{}]);
    upstream.enqueue(completion(1, 1));
    const r = await call(gw.origin, secrets[0]!, 'POST', '/chat/completions', chat({ user: 'alice@example.com' }));
    assert.equal(r.status, 200);
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').select(['retention', 'content', 'end_user']).where('request_id', '=', r.headers.get('x-request-id') ?? '').executeTakeFirstOrThrow();
    assert.equal(row.retention, 'none');
    assert.equal(row.content, null);
    assert.match(row.end_user ?? '', /^sha256:[0-9a-f]{32}$/);
    const id = (r.body.id as string) ?? '';
    const generation = await admin('GET', `/generation?id=${encodeURIComponent(id)}`);
    assert.equal(generation.body.data.user, row.end_user);
  });
});

describe('end-user caps', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(pricey(upstream.url));
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });
  const admin = (m: string, p: string, b?: unknown) => call(gw.origin, gw.adminKey, m, p, b);

  test('requests per minute per end user: `user`, `x-op-user` and Anthropic metadata.user_id name one; others are not held back', async () => {
    const created = await admin('POST', '/keys', { name: 'app', end_user_limits: { requests_per_minute: 2 } });
    assert.deepEqual(created.body.data.end_user_limits, { requests_per_minute: 2, tokens_per_minute: null, usd_per_day: null });
    const secret = created.body.key as string;
    upstream.setDefault(completion(1, 1));
    try {
      assert.equal((await call(gw.origin, secret, 'POST', '/chat/completions', chat({ user: 'alice' }))).status, 200);
      assert.equal((await call(gw.origin, secret, 'POST', '/chat/completions', chat(), { 'x-op-user': 'alice' })).status, 200);
      const third = await call(gw.origin, secret, 'POST', '/chat/completions', chat({ user: 'alice' }));
      assert.equal(third.status, 429);
      assert.equal(third.body.error.code, 'rate_limited');
      assert.deepEqual(third.body.error.metadata, { level: 'end_user' });
      assert.match(third.body.error.message, /^rate limit of 2 requests per minute reached for this end user/);
      assert.equal((await call(gw.origin, secret, 'POST', '/chat/completions', chat({ user: 'bob' }))).status, 200);
      assert.equal((await call(gw.origin, secret, 'POST', '/chat/completions', chat())).status, 200, 'no end user: no end-user cap');
    } finally {
      upstream.setDefault(undefined);
    }
    const messages = await call(gw.origin, secret, 'POST', '/messages', { model: 'test/model', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], metadata: { user_id: 'alice' } });
    assert.equal(messages.status, 429);
    assert.equal(messages.body.error.type, 'rate_limit_error');
  });

  test('USD per day per end user: refused with 402 level end_user once the day\'s spend leaves no room; records and usage by user', async () => {
    // Each request costs 12 tokens × $0.001 = $0.012; its worst case is (estimated prompt + 10) × $0.001.
    const secret = (await admin('POST', '/keys', { name: 'app2', retention: 30, end_user_limits: { usd_per_day: '0.05' } })).body.key as string;
    upstream.setDefault(completion(11, 1));
    let passed = 0;
    let refused: Json | undefined;
    try {
      for (let i = 0; i < 10 && !refused; i++) {
        const r = await call(gw.origin, secret, 'POST', '/chat/completions', chat({ user: 'carol', max_tokens: 10 }));
        if (r.status === 200) passed++;
        else refused = r;
      }
      assert.ok(refused, 'the end user was refused');
      assert.equal(refused.status, 402);
      assert.equal(refused.body.error.metadata.level, 'end_user');
      assert.match(refused.body.error.message, /but this end user can only afford \d+$/);
      // Spent 0.012 × passed ≤ 0.05, and the next worst case (> 0.012) did not fit what was left.
      assert.ok(passed >= 2 && passed <= 4, `passed ${passed}`);
      assert.ok(0.012 * passed <= 0.05);
      const other = await call(gw.origin, secret, 'POST', '/chat/completions', chat({ user: 'dave', max_tokens: 10 }));
      assert.equal(other.status, 200);
    } finally {
      upstream.setDefault(undefined);
    }
    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').select(['end_user', 'status']).where('end_user', 'in', ['carol', 'dave']).execute();
    assert.equal(rows.filter((r) => r.end_user === 'carol').length, passed + 1);
    const usage = await admin('GET', '/usage?group_by=user&bucket=day');
    const carol = usage.body.data.find((r: Json) => r.group === 'carol');
    assert.equal(carol.requests, passed + 1);
    assert.equal(carol.refused, 1);
    assert.equal(carol.cost, (0.012 * passed).toFixed(3).replace(/0+$/, ''));
    assert.equal(usage.body.data.find((r: Json) => r.group === 'dave').cost, '0.012');
  });

  test('an x-op-user longer than 256 characters is a 400 naming the header', async () => {
    const { secret } = await gw.createKey('long');
    const r = await call(gw.origin, secret, 'POST', '/chat/completions', chat(), { 'x-op-user': 'u'.repeat(257) });
    assert.deepEqual([r.status, r.body.error.code, r.body.error.param], [400, 'invalid_request', 'x-op-user']);
  });
});

interface Replica {
  gateway: Gateway;
  store: OpenDatabase;
  origin: string;
}

describe('a team across two gateways sharing Redis and the database', { skip: noRedis }, () => {
  let upstream: Upstream;
  const replicas: Replica[] = [];
  let drop: () => Promise<void>;
  before(async () => {
    upstream = await startUpstream();
    const database = await createTestDatabase();
    drop = () => database.drop();
    const prefix = `op-test:${randomId(12)}:`;
    for (let i = 0; i < 2; i++) {
      const store = database.open();
      await migrate(store.db);
      const gateway = buildGateway({ loaded: { config: parseConfig({ ...pricey(upstream.url), routing: { circuit_breaker: { failure_threshold: 1000 } } }, 'test config'), source: 'test' }, db: store.db, adminKey: 'admin-test-key', logger: { level: 'warn', stream: gatewayLogStream() }, redisUrl: TEST_REDIS_URL, redisPrefix: prefix, purgeIntervalMs: 0 });
      await gateway.app.listen({ port: 0, host: '127.0.0.1' });
      replicas.push({ gateway, store, origin: `http://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}` });
    }
  });
  after(async () => {
    for (const r of replicas) {
      await r.gateway.close();
      await r.store.close();
    }
    await drop?.();
    await upstream?.close();
  });

  test('a team budget spent through both stops exactly at the budget', async () => {
    const [a, b] = replicas as [Replica, Replica];
    const team = (await call(a.origin, 'admin-test-key', 'POST', '/teams', { name: 'fleet', limit: '0.06' })).body.data;
    const k1 = (await call(a.origin, 'admin-test-key', 'POST', '/keys', { name: 'one', team: team.id })).body.key as string;
    const k2 = (await call(b.origin, 'admin-test-key', 'POST', '/keys', { name: 'two', team: team.id })).body.key as string;
    // Every request costs exactly $0.012 (12 tokens) and may cost at most (prompt estimate + 1) × $0.001 < $0.012:
    // the budget of $0.06 holds exactly 5, whichever replica and key they come through.
    upstream.setDefault({ ...completion(11, 1), delayBeforeHeadersMs: 50 });
    const statuses: number[] = [];
    try {
      for (let round = 0; round < 4; round++) {
        const results = await Promise.all([a, b, a, b].map((r, i) => call(r.origin, i % 2 ? k2 : k1, 'POST', '/chat/completions', chat({ max_tokens: 1 }))));
        statuses.push(...results.map((r) => r.status));
        for (const r of results) if (r.status === 402) assert.equal(r.body.error.metadata.level, 'team');
      }
    } finally {
      upstream.setDefault(undefined);
    }
    assert.equal(statuses.filter((s) => s === 200).length, 5, statuses.join(' '));
    assert.equal(statuses.filter((s) => s === 402).length, 11);
    await a.gateway.runtime().writer.flush();
    await b.gateway.runtime().writer.flush();
    for (const r of [a, b]) {
      const got = await call(r.origin, 'admin-test-key', 'GET', `/teams/${team.id}`);
      assert.equal(got.body.data.usage, '0.06');
      assert.equal(got.body.data.limit_remaining, '0');
    }
  });

  test('a team change on one replica holds on the other at once (the key-change path)', async () => {
    const [a, b] = replicas as [Replica, Replica];
    const team = (await call(a.origin, 'admin-test-key', 'POST', '/teams', { name: 'moving' })).body.data;
    const key = (await call(a.origin, 'admin-test-key', 'POST', '/keys', { name: 'm', team: team.id })).body.key as string;
    upstream.setDefault(completion(1, 1));
    try {
      assert.equal((await call(b.origin, key, 'POST', '/chat/completions', chat())).status, 200); // B caches the key with its team
      await call(a.origin, 'admin-test-key', 'PATCH', `/teams/${team.id}`, { allowed_models: ['test/model'], rate_limit: { requests_per_minute: 1 } });
      const started = Date.now();
      let status = 0;
      while (status !== 403 && Date.now() - started < 2000) status = (await call(b.origin, key, 'POST', '/chat/completions', chat({ model: 'other/model' }))).status;
      assert.equal(status, 403);
      assert.ok(Date.now() - started < 1000, `took ${Date.now() - started} ms`);
    } finally {
      upstream.setDefault(undefined);
    }
  });
});
