/** Keys, budgets and rate limits (issue 5 items 1–3), in-process and through Redis. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { validateErrorResponse } from '../helpers/openapi.js';
import { estimatePromptTokens } from '../../src/accounting/estimate-tokens.js';
import { createKey } from '../../src/store/keys.js';
import { redisReachable, TEST_REDIS_URL } from '../helpers/redis.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const REDIS_URL = TEST_REDIS_URL;


const completion = (prompt: number, completionTokens: number) => ({
  json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens } },
});

function api(gw: TestGateway, key: string) {
  return async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gw.baseURL}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
  };
}

// $1000 per 1M tokens both ways: one token costs exactly $0.001.
const pricey = (url: string) => oneModelConfig(url, { endpoint: { pricing: { prompt: 1000, completion: 1000 }, max_completion_tokens: 4096 } });

describe('key management API', () => {
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

  test('create shows the secret once and stores only its hash; list, get, patch, delete', async () => {
    const admin = api(gw, gw.adminKey);
    const created = await admin('POST', '/keys', { name: 'team-a', limit: 1, limit_reset: 'monthly', rate_limit: { requests_per_minute: 60 }, allowed_models: ['test/model'], retention: 7 });
    assert.equal(created.status, 201);
    const secret = created.body.key as string;
    assert.match(secret, /^op-[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(
      { ...created.body.data, id: undefined, created_at: undefined, label: undefined },
      { id: undefined, name: 'team-a', label: undefined, disabled: false, limit: '1', limit_reset: 'monthly', rate_limit: { requests_per_minute: 60, tokens_per_minute: null }, allowed_models: ['test/model'], allowed_tools: [], max_tools: null, mcp_calls_per_minute: null, retention: 7, cache: null, team: null, end_user_limits: { requests_per_minute: null, tokens_per_minute: null, usd_per_day: null }, expires_at: null, created_at: undefined, usage: '0', usage_daily: '0', usage_weekly: '0', usage_monthly: '0', usage_total: '0', limit_remaining: '1' },
    );
    const id = created.body.data.id as string;
    const rows = await gw.store.db.selectFrom('api_keys').selectAll().where('id', '=', id).execute();
    assert.equal(JSON.stringify(rows).includes(secret), false);
    assert.equal(rows[0]!.hash.length, 64);
    const listed = await admin('GET', '/keys');
    assert.equal(listed.body.data.some((k: Json) => k.id === id && k.key === undefined), true);
    const patched = await admin('PATCH', `/keys/${id}`, { limit: '2.5', rate_limit: { tokens_per_minute: 1000 } });
    assert.equal(patched.body.data.limit, '2.5');
    assert.deepEqual(patched.body.data.rate_limit, { requests_per_minute: 60, tokens_per_minute: 1000 });
    assert.equal((await admin('GET', `/keys/${id}`)).body.data.limit_remaining, '2.5');
    const own = await api(gw, secret)('GET', '/key');
    assert.equal(own.body.data.name, 'team-a');
    assert.equal(own.body.data.limit_remaining, 2.5, 'GET /v1/key has OpenRouter number types');
    assert.equal((await admin('PATCH', `/keys/${id}`, { disabled: true })).body.data.disabled, true);
    const refused = await api(gw, secret)('GET', '/key');
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error.message, 'the API key is disabled');
    assert.deepEqual((await admin('DELETE', `/keys/${id}`)).body, { data: { id, deleted: true } });
    assert.equal((await admin('GET', `/keys/${id}`)).status, 404);
  });

  test('the key API needs the admin key and validates its input', async () => {
    const k = await gw.createKey('plain');
    const denied = await api(gw, k.secret)('GET', '/keys');
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error.code, 'admin_key_required');
    assert.deepEqual(validateErrorResponse(denied.body), []);
    const admin = api(gw, gw.adminKey);
    const bad = await admin('POST', '/keys', { name: 'x', limit: -1 });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'limit');
    const unknown = await admin('POST', '/keys', { name: 'x', budget: 3 });
    assert.equal(unknown.body.error.param, 'budget');
    const reset = await admin('POST', '/keys', { name: 'x', limit_reset: 'hourly' });
    assert.equal(reset.body.error.param, 'limit_reset');
  });

  test('numeric limits are exact decimals: 99999.99 is fine, more than 6 decimals is a 400', async () => {
    const admin = api(gw, gw.adminKey);
    const ok = await admin('POST', '/keys', { name: 'big', limit: 99999.99 });
    assert.equal(ok.status, 201);
    assert.equal(ok.body.data.limit, '99999.99');
    for (const limit of [0.0000015, 1e-20]) {
      const bad = await admin('POST', '/keys', { name: 'tiny', limit });
      assert.equal(bad.status, 400, String(limit));
      assert.equal(bad.body.error.param, 'limit');
    }
  });

  test('allowed models, expiry and a key default retention', async () => {
    const admin = api(gw, gw.adminKey);
    // A key allowed only a model that is no longer configured (the admin API refuses unknown ids).
    const limited = (await createKey(gw.store.db, 'only-other', null, { allowed_models: ['other/model'] })).secret;
    const res = await api(gw, limited)('POST', '/chat/completions', { model: 'test/model', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.code, 'model_not_allowed');
    assert.equal(res.body.error.param, 'model');
    const expired = (await admin('POST', '/keys', { name: 'old', expires_at: '2020-01-01T00:00:00Z' })).body.key as string;
    const exp = await api(gw, expired)('GET', '/key');
    assert.equal(exp.status, 401);
    assert.equal(exp.body.error.code, 'key_expired');
    const keeper = (await admin('POST', '/keys', { name: 'keeper', retention: 3 })).body.key as string;
    upstream.enqueue(completion(3, 1));
    const ok = await api(gw, keeper)('POST', '/chat/completions', { model: 'test/model', messages: [{ role: 'user', content: 'remember me' }] });
    const gen = await api(gw, keeper)('GET', `/generation?id=${ok.body.id}`);
    assert.equal(gen.body.data.retention, 3);
    assert.deepEqual(gen.body.data.content.request.messages, [{ role: 'user', content: 'remember me' }]);
  });
});

for (const store of ['memory', 'redis'] as const) {
  describe(`limits (${store})`, async () => {
    const skip = store === 'redis' && !(await redisReachable()) ? `Redis is not reachable at ${REDIS_URL} (set OP_TEST_REDIS_URL); .ci/run starts one` : false;
    let upstream: Upstream;
    let gw: TestGateway;
    before(async () => {
      if (skip) return;
      upstream = await startUpstream();
      gw = await startGateway(pricey(upstream.url), { redisUrl: store === 'redis' ? REDIS_URL : undefined });
    });
    after(async () => {
      await gw?.close();
      await upstream?.close();
    });

    test('a $1 budget: worst case reserved, real cost settled, refused with 402 when spent', { skip }, async () => {
      const admin = api(gw, gw.adminKey);
      const secret = (await admin('POST', '/keys', { name: 'budget', limit: '1' })).body.key as string;
      const call = api(gw, secret);
      const body = { model: 'test/model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 500 };
      upstream.enqueue(completion(100, 500));
      const first = await call('POST', '/chat/completions', body);
      assert.equal(first.status, 200);
      assert.equal(first.body.usage.cost, 0.6);
      await gw.flush();
      const me = await call('GET', '/key');
      assert.equal(me.body.data.usage, 0.6);
      assert.equal(me.body.data.limit_remaining, 0.4);
      // Worst case now: the estimated prompt tokens + 500 output tokens, at $0.001 each, > $0.40 left.
      const refused = await call('POST', '/chat/completions', body);
      assert.equal(refused.status, 402);
      assert.equal(refused.body.error.code, 'insufficient_credits');
      assert.equal(refused.body.error.param, 'max_tokens');
      const afford = refused.body.error.metadata.affordable_output_tokens as number;
      const promptEstimate = estimatePromptTokens([{ role: 'user', content: 'hi' }]);
      assert.equal(afford, 400 - promptEstimate);
      assert.match(refused.body.error.message, new RegExp(`up to 500 output tokens at up/upstream-model, but the key can only afford ${afford}$`));
      upstream.enqueue(completion(11, 300));
      const smaller = await call('POST', '/chat/completions', { ...body, max_tokens: afford });
      assert.equal(smaller.status, 200);
      assert.equal(upstream.requests.at(-1)!.json && (upstream.requests.at(-1)!.json as Json).max_completion_tokens, afford);
    });

    test('50 parallel requests against 10 requests per minute: exactly 10 pass', { skip }, async () => {
      const admin = api(gw, gw.adminKey);
      const secret = (await admin('POST', '/keys', { name: 'rpm', rate_limit: { requests_per_minute: 10 } })).body.key as string;
      upstream.setDefault(completion(1, 1));
      try {
        const results = await Promise.all(Array.from({ length: 50 }, () => api(gw, secret)('POST', '/chat/completions', { model: 'test/model', messages: [{ role: 'user', content: 'x' }] })));
        const statuses = results.map((r) => r.status);
        assert.equal(statuses.filter((s) => s === 200).length, 10);
        assert.equal(statuses.filter((s) => s === 429).length, 40);
        const limited = results.find((r) => r.status === 429)!;
        assert.equal(limited.body.error.code, 'rate_limited');
        assert.equal(limited.body.error.kind, 'retryable');
        assert.equal(limited.headers.get('x-ratelimit-limit-requests'), '10');
        assert.equal(limited.headers.get('x-ratelimit-remaining-requests'), '0');
        assert.match(limited.headers.get('x-ratelimit-reset-requests') ?? '', /^(\d+m)?\d+s$/);
        assert.ok(Number(limited.headers.get('retry-after')) >= 1 && Number(limited.headers.get('retry-after')) <= 60);
        const ok = results.find((r) => r.status === 200)!;
        assert.match(ok.headers.get('x-ratelimit-remaining-requests') ?? '', /^\d$/);
      } finally {
        upstream.setDefault(undefined);
      }
    });

    test('credit holds exactly under concurrency: 20 parallel requests, room for 3 worst cases', { skip }, async () => {
      const admin = api(gw, gw.adminKey);
      // Worst case of each: (estimated prompt + 100 output tokens) × $0.001 ≈ $0.107; $0.34 covers exactly 3 at once.
      const secret = (await admin('POST', '/keys', { name: 'credit', limit: '0.34' })).body.key as string;
      upstream.setDefault({ ...completion(11, 1), delayBeforeHeadersMs: 300 });
      try {
        const results = await Promise.all(Array.from({ length: 20 }, () => api(gw, secret)('POST', '/chat/completions', { model: 'test/model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 })));
        assert.equal(results.filter((r) => r.status === 200).length, 3);
        assert.equal(results.filter((r) => r.status === 402).length, 17);
      } finally {
        upstream.setDefault(undefined);
      }
      await gw.flush();
      const me = await api(gw, secret)('GET', '/key');
      assert.equal(me.body.data.usage, 0.036); // 3 × 12 tokens × $0.001
    });
  });
}

describe('limits store unreachable', () => {
  test('a key with limits gets 503 limits_unavailable, others keep working, /ready says why', async () => {
    const upstream = await startUpstream();
    const gw = await startGateway(pricey(upstream.url), { redisUrl: 'redis://127.0.0.1:1' });
    try {
      const admin = api(gw, gw.adminKey);
      const secret = (await admin('POST', '/keys', { name: 'limited', rate_limit: { requests_per_minute: 5 } })).body.key as string;
      const res = await api(gw, secret)('POST', '/chat/completions', { model: 'test/model', messages: [{ role: 'user', content: 'x' }] });
      assert.equal(res.status, 503);
      assert.equal(res.body.error.code, 'limits_unavailable');
      assert.equal(res.body.error.kind, 'retryable');
      upstream.enqueue(completion(1, 1));
      const free = await api(gw, gw.adminKey)('POST', '/chat/completions', { model: 'test/model', messages: [{ role: 'user', content: 'x' }] });
      assert.equal(free.status, 200);
      const ready = await fetch(`${gw.origin}/ready`);
      assert.equal(ready.status, 503);
      assert.deepEqual(await ready.json(), { status: 'not ready', reason: 'the limit store (OP_REDIS_URL) cannot be reached' });
    } finally {
      await gw.close();
      await upstream.close();
    }
  });
});
