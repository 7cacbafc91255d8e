/** Routing and resilience: plans, provider preferences, fallbacks, health, keep-alive (issue 3). */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { parseConfig } from '../../src/config/load.js';
import { buildCatalog } from '../../src/routing/catalog.js';
import { HealthRegistry } from '../../src/routing/endpoint-health.js';
import { planRoute } from '../../src/routing/route-plan.js';
import type { ChatRequest } from '../../src/core/chat-types.js';
import { seededRandom } from '../helpers/seeded-random.js';
import { sseJsonEvents } from '../helpers/sse.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any


const answer = (content: string) => ({
  json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } },
});
const sseAnswer = (content: string, extra: Json = {}) => ({
  sse: [JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] }), JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } })],
  ...extra,
});

interface ProviderSpec {
  id: string;
  upstream: Upstream;
  price?: number;
  quantization?: string;
  data_policy?: Json;
  supported_parameters?: string[];
  timeouts?: Json;
}

function config(model: string, specs: ProviderSpec[], extra: Json = {}, more: Json[] = []) {
  return {
    providers: specs.map((s) => ({ id: s.id, kind: 'openai', base_url: s.upstream.url, data_policy: s.data_policy ?? {}, ...(s.timeouts ? { timeouts: s.timeouts } : {}) })),
    models: [
      {
        id: model,
        context_length: 8192,
        endpoints: specs.map((s) => ({
          provider: s.id,
          upstream_model: `${s.id}-model`,
          pricing: { prompt: s.price ?? 1, completion: s.price ?? 1 },
          ...(s.quantization ? { quantization: s.quantization } : {}),
          supported_parameters: s.supported_parameters ?? ['temperature', 'max_tokens', 'tools'],
        })),
      },
      ...more,
    ],
    ...extra,
  };
}

const post = (gw: TestGateway, body: Json, signal?: AbortSignal) =>
  fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body), signal });
const msgs = [{ role: 'user', content: 'hi' }];

async function detailOf(gw: TestGateway, id: string): Promise<Json> {
  await gw.flush();
  const row = await gw.store.db.selectFrom('generations').select(['detail', 'provider', 'served_model', 'status', 'cancelled']).where('id', '=', id).executeTakeFirstOrThrow();
  return { ...row, detail: JSON.parse(row.detail) as Json };
}

describe('router: plans from provider preferences', () => {
  const ups: Upstream[] = [];
  let a: Upstream;
  let b: Upstream;
  let c: Upstream;
  let gw: TestGateway;
  before(async () => {
    [a, b, c] = await Promise.all([startUpstream(), startUpstream(), startUpstream()]);
    ups.push(a, b, c);
    gw = await startGateway(
      config('test/model', [
        { id: 'alpha', upstream: a, price: 1, quantization: 'fp8', data_policy: { retains_prompts: true } },
        { id: 'beta', upstream: b, price: 2, quantization: 'bf16', data_policy: { zdr: true }, supported_parameters: ['temperature', 'max_tokens', 'tools', 'seed'] },
        { id: 'gamma', upstream: c, price: 3, quantization: 'fp8' },
      ], {}, [{ id: 'test/backup', context_length: 8192, endpoints: [{ provider: 'gamma', upstream_model: 'backup-model', pricing: { prompt: 5, completion: 5 } }] }]),
    );
  });
  after(async () => {
    await gw.close();
    await Promise.all(ups.map((u) => u.close()));
  });

  test('provider.order is tried first, in order; a failure falls back to the next', async () => {
    c.enqueue({ status: 500, json: { error: { message: 'gamma down' } } });
    b.enqueue(answer('from beta'));
    const res = await post(gw, { model: 'test/model', messages: msgs, provider: { order: ['gamma', 'beta'] } });
    const body = (await res.json()) as Json;
    assert.equal(body.choices[0].message.content, 'from beta');
    const rec = await detailOf(gw, body.id);
    assert.deepEqual(rec.detail.attempts.map((x: Json) => [x.provider, x.status, x.error_code, x.reason]), [
      ['gamma', 500, 'upstream_error', 'provider.order'],
      ['beta', 200, null, 'provider.order'],
    ]);
    assert.equal(rec.detail.routing_reason, 'provider.order');
    assert.equal(a.requests.length, 0);
  });

  test('allow_fallbacks: false keeps to the order list and returns its error', async () => {
    c.enqueue({ status: 503, json: { error: { message: 'gamma overloaded' } } });
    const res = await post(gw, { model: 'test/model', messages: msgs, provider: { order: ['gamma'], allow_fallbacks: false } });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 503);
    assert.equal(body.error.code, 'upstream_overloaded');
    assert.equal(a.requests.length + b.requests.length, 1); // only beta's earlier request
  });

  test('only, ignore, quantizations, data_collection, zdr, max_price and require_parameters filter endpoints', async () => {
    const served = async (provider: Json, extra: Json = {}) => {
      for (const u of [a, b, c]) u.setDefault(answer(u === a ? 'alpha' : u === b ? 'beta' : 'gamma'));
      const res = await post(gw, { model: 'test/model', messages: msgs, provider: { sort: 'price', ...provider }, ...extra });
      const body = (await res.json()) as Json;
      return res.status === 200 ? body.choices[0].message.content : body.error;
    };
    assert.equal(await served({}), 'alpha');
    assert.equal(await served({ only: ['gamma', 'beta'] }), 'beta');
    assert.equal(await served({ ignore: ['alpha'] }), 'beta');
    assert.equal(await served({ ignore: ['alpha/alpha-model', 'beta'] }), 'gamma');
    assert.equal(await served({ quantizations: ['bf16'] }), 'beta');
    assert.equal(await served({ data_collection: 'deny' }), 'beta');
    assert.equal(await served({ zdr: true }), 'beta');
    assert.equal(await served({ max_price: { prompt: 2.5 }, ignore: ['alpha'] }), 'beta');
    assert.equal(await served({ require_parameters: true }, { seed: 7 }), 'beta');
    const err = (await served({ only: ['alpha'], zdr: true })) as Json;
    assert.equal(err.code, 'no_endpoint_available');
    assert.equal(
      err.message,
      'no endpoint can serve this request for model "test/model": alpha/alpha-model: provider alpha is not zero-data-retention (zdr: true); beta/beta-model: not in provider.only [alpha]; gamma/gamma-model: not in provider.only [alpha]',
    );
    assert.deepEqual(err.metadata.excluded.map((e: Json) => e.reason), ['data_policy', 'not_in_only', 'not_in_only']);
    for (const u of [a, b, c]) u.setDefault(undefined);
  });

  test('the context window and unsupported parameters are explained', async () => {
    const big = 'word '.repeat(9000);
    const res = await post(gw, { model: 'test/model', messages: [{ role: 'user', content: big }] });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 400);
    assert.equal(body.error.code, 'context_length_exceeded');
    assert.match(body.error.message, /alpha\/alpha-model: about \d+ prompt tokens \+ 0 output tokens exceed its context length 8192/);
    const tools = await post(gw, { model: 'test/backup', messages: msgs, tools: [{ type: 'function', function: { name: 'f' } }] });
    const tb = (await tools.json()) as Json;
    assert.equal(tb.error.code, 'no_endpoint_available');
    assert.equal(tb.error.message, 'no endpoint can serve this request for model "test/backup": gamma/backup-model: does not support "tools"');
  });

  test('models: when the first model\'s endpoints fail, the next model answers and is reported', async () => {
    for (const u of [a, b, c]) u.enqueue({ status: 502, text: 'bad gateway' });
    c.enqueue(answer('from backup'));
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
    const res = await client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }], models: ['test/backup'] } as never) as unknown as Json;
    assert.equal(res.model, 'test/backup');
    assert.equal(res.choices[0].message.content, 'from backup');
    const rec = await detailOf(gw, res.id);
    assert.equal(rec.detail.attempts.length, 4);
    assert.equal(rec.detail.attempts[3].reason, 'models[0]:weighted-random');
    assert.equal(rec.served_model, 'test/backup');
  });

  test('a failure caused by the request (upstream 400) is not retried on another endpoint', async () => {
    a.enqueue({ status: 400, json: { error: { message: "Unrecognized request argument supplied: foo", type: 'invalid_request_error', param: 'foo' } } });
    const before = b.requests.length + c.requests.length;
    const res = await post(gw, { model: 'test/model', messages: msgs, provider: { sort: 'price' } });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 400);
    assert.equal(body.error.code, 'upstream_bad_request');
    assert.equal(body.error.param, 'foo');
    assert.equal(b.requests.length + c.requests.length, before);
  });
});

describe('router: the price-weighted default choice (fixed seed)', () => {
  test('first picks follow inverse square of price: $1, $2, $3 → 36/49, 9/49, 4/49', async () => {
    const dummy = { url: 'http://127.0.0.1:9/v1' } as Upstream;
    const cfg = parseConfig(config('test/model', [{ id: 'one', upstream: dummy, price: 0.5 }, { id: 'two', upstream: dummy, price: 1 }, { id: 'three', upstream: dummy, price: 1.5 }]), 'test');
    const catalog = buildCatalog(cfg);
    const health = new HealthRegistry({ failureThreshold: 5, openMs: 30000, windowMs: 60000, recentFailureMs: 30000 });
    const random = seededRandom(42);
    const counts: Record<string, number> = { one: 0, two: 0, three: 0 };
    const req: ChatRequest = { model: 'test/model', messages: [{ role: 'user', content: 'x' }] };
    const N = 20000;
    for (let i = 0; i < N; i++) counts[planRoute(req, { catalog, health, random }, 10).endpoints[0]!.target.provider.id]!++;
    assert.ok(Math.abs(counts.one! / N - 36 / 49) < 0.01, JSON.stringify(counts));
    assert.ok(Math.abs(counts.two! / N - 9 / 49) < 0.01, JSON.stringify(counts));
    assert.ok(Math.abs(counts.three! / N - 4 / 49) < 0.01, JSON.stringify(counts));
    // A recently failing endpoint goes last whatever its price.
    health.recordFailure('one/one-model', { latencyMs: 5, rateLimited: false });
    const order = planRoute(req, { catalog, health, random }, 10).endpoints.map((p) => [p.target.provider.id, p.reason]);
    assert.deepEqual(order.at(-1), ['one', 'recently-failing']);
  });
});

describe('health: circuit breaker, cooldowns, statistics', () => {
  let a: Upstream;
  let gw: TestGateway;
  before(async () => {
    a = await startUpstream();
    gw = await startGateway(
      config('test/model', [{ id: 'alpha', upstream: a }], { routing: { circuit_breaker: { failure_threshold: 2, open_ms: 300 }, retry_after_cap_ms: 60000, recent_failure_ms: 0 } }),
    );
  });
  after(async () => {
    await gw.close();
    await a.close();
  });

  test('open after repeated failures, refuse fast, half-open probe, close on success', async () => {
    a.enqueue({ status: 500, text: 'x' }, { status: 500, text: 'y' });
    assert.equal((await post(gw, { model: 'test/model', messages: msgs })).status, 502);
    assert.equal((await post(gw, { model: 'test/model', messages: msgs })).status, 502);
    const refused = await post(gw, { model: 'test/model', messages: msgs });
    const body = (await refused.json()) as Json;
    assert.equal(refused.status, 503);
    assert.equal(body.error.code, 'endpoints_unavailable');
    assert.equal(body.error.kind, 'retryable');
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.equal(a.requests.length, 2);
    const endpoints = (await (await fetch(`${gw.baseURL}/models/test/model/endpoints`, { headers: { authorization: `Bearer ${gw.adminKey}` } })).json()) as Json;
    assert.equal(endpoints.data.endpoints[0].circuit, 'open');
    assert.equal(endpoints.data.endpoints[0].status, -1);
    await new Promise((r) => setTimeout(r, 350));
    a.enqueue({ status: 500, text: 'still down' });
    assert.equal((await post(gw, { model: 'test/model', messages: msgs })).status, 502); // the probe fails: open again
    assert.equal((await post(gw, { model: 'test/model', messages: msgs })).status, 503);
    await new Promise((r) => setTimeout(r, 350));
    a.enqueue(answer('back'));
    const ok = await post(gw, { model: 'test/model', messages: msgs });
    assert.equal(((await ok.json()) as Json).choices[0].message.content, 'back');
    a.enqueue(answer('again'));
    assert.equal((await post(gw, { model: 'test/model', messages: msgs })).status, 200);
    const after = (await (await fetch(`${gw.baseURL}/models/test/model/endpoints`, { headers: { authorization: `Bearer ${gw.adminKey}` } })).json()) as Json;
    const e = after.data.endpoints[0];
    assert.equal(e.circuit, 'closed');
    assert.equal(e.requests_last_30m, 5);
    assert.equal(e.uptime_last_30m, 2 / 5);
    assert.equal(typeof e.duration_last_30m.p50, 'number');
  });
});

describe('retry-after cooldown and keep-alive', () => {
  let a: Upstream;
  let b: Upstream;
  let gw: TestGateway;
  before(async () => {
    [a, b] = await Promise.all([startUpstream(), startUpstream()]);
    gw = await startGateway(
      config('test/model', [{ id: 'alpha', upstream: a, price: 1, timeouts: { first_token_ms: 2000 } }, { id: 'beta', upstream: b, price: 9 }], {
        server: { keepalive_interval_ms: 40 },
        routing: { retry_after_cap_ms: 60000, recent_failure_ms: 0 },
      }),
    );
  });
  after(async () => {
    await gw.close();
    await a.close();
    await b.close();
  });

  test('a 429 with Retry-After falls back now and the endpoint is skipped while it cools down', async () => {
    a.enqueue({ status: 429, headers: { 'retry-after': '30' }, json: { error: { message: 'slow down' } } });
    b.enqueue(answer('beta 1'), answer('beta 2'));
    const first = (await (await post(gw, { model: 'test/model', messages: msgs, provider: { sort: 'price' } })).json()) as Json;
    assert.equal(first.choices[0].message.content, 'beta 1');
    const second = (await (await post(gw, { model: 'test/model', messages: msgs, provider: { sort: 'price' } })).json()) as Json;
    assert.equal(second.choices[0].message.content, 'beta 2');
    assert.equal(a.requests.length, 1);
    const rec = await detailOf(gw, second.id);
    assert.deepEqual(rec.detail.attempts.map((x: Json) => x.provider), ['beta']);
    const ep = (await (await fetch(`${gw.baseURL}/models/test/model/endpoints`, { headers: { authorization: `Bearer ${gw.adminKey}` } })).json()) as Json;
    assert.equal(typeof ep.data.endpoints[0].cooldown_until, 'string');
    assert.equal(ep.data.endpoints[0].uptime_last_30m, null); // rate limits do not count against uptime
  });

  test('keep-alive comments while waiting for the first token, and failover still possible after them', async () => {
    b.enqueue({ status: 500, delayBeforeHeadersMs: 150, text: 'beta died' });
    const c2 = await startUpstream();
    try {
      // beta (first by order) is slow then fails; alpha is cooling down, so beta is alone: the
      // error arrives inside the already-open stream.
      const res = await post(gw, { model: 'test/model', messages: msgs, stream: true, provider: { order: ['beta'] } });
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.match(text, /^: keep-alive\n\n/);
      const events = text.split('\n\n').filter((e) => e.startsWith('data: '));
      assert.equal(events.at(-1), 'data: [DONE]');
      const errChunk = JSON.parse(events.at(-2)!.slice(6)) as Json;
      assert.equal(errChunk.error.code, 'upstream_error');
      assert.equal(errChunk.choices[0].finish_reason, 'error');
    } finally {
      await c2.close();
    }
  });

  test("an upstream's Retry-After beyond routing.retry_after_cap_ms reaches the client capped (60 s), not as sent", async () => {
    b.enqueue({ status: 429, headers: { 'retry-after': '99999' }, json: { error: { message: 'slow down for a day' } } });
    const res = await post(gw, { model: 'test/model', messages: msgs, provider: { order: ['beta'], allow_fallbacks: false } });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '60');
    assert.equal(((await res.json()) as Json).error.code, 'upstream_rate_limited');
  });
});

describe('client disconnect during a failover', () => {
  test('aborts the pending upstream attempt, tries nothing else, records cancelled', async () => {
    const [a, b] = await Promise.all([startUpstream(), startUpstream()]);
    const gw = await startGateway(config('test/model', [{ id: 'alpha', upstream: a, price: 1 }, { id: 'beta', upstream: b, price: 2 }]));
    try {
      a.enqueue({ status: 500, text: 'first fails' });
      b.enqueue({ ...sseAnswer('late'), delayBeforeHeadersMs: 1000 });
      const ctrl = new AbortController();
      const pending = post(gw, { model: 'test/model', messages: msgs, stream: true, provider: { sort: 'price' } }, ctrl.signal).catch((e: Error) => e);
      while (b.requests.length === 0) await new Promise((r) => setTimeout(r, 10));
      ctrl.abort();
      assert.ok((await pending) instanceof Error);
      await b.waitForAbort(2000);
      await new Promise((r) => setTimeout(r, 50));
      await gw.flush();
      const row = await gw.store.db.selectFrom('generations').selectAll().executeTakeFirstOrThrow();
      assert.equal(row.status, 'cancelled');
      assert.equal(row.cancelled, 1);
      assert.deepEqual(JSON.parse(row.detail).attempts.map((x: Json) => [x.provider, x.error_code]), [['alpha', 'upstream_error'], ['beta', 'client_closed_request']]);
    } finally {
      await gw.close();
      await a.close();
      await b.close();
    }
  });
});

describe('time', () => {
  test('a stream that keeps sending is never cut by total_ms (that is for non-streamed calls)', async () => {
    const a = await startUpstream();
    const gw = await startGateway(config('test/model', [{ id: 'alpha', upstream: a, timeouts: { total_ms: 150, idle_ms: 5000, first_token_ms: 5000 } }]));
    try {
      const pieces = Array.from({ length: 6 }, (_, i) => JSON.stringify({ choices: [{ index: 0, delta: { content: `p${i} ` }, finish_reason: null }] }));
      a.enqueue({ sse: [...pieces, JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })], delayMs: 60 });
      const res = await post(gw, { model: 'test/model', messages: msgs, stream: true });
      const text = await res.text();
      const content = sseJsonEvents(text).map((e) => e.choices[0]?.delta?.content ?? '').join('');
      assert.equal(content, 'p0 p1 p2 p3 p4 p5 ');
      a.enqueue({ ...answer('too slow'), delayBeforeHeadersMs: 400 });
      const slow = await post(gw, { model: 'test/model', messages: msgs });
      assert.equal(slow.status, 504);
      assert.equal(((await slow.json()) as Json).error.code, 'upstream_timeout');
    } finally {
      await gw.close();
      await a.close();
    }
  });
});

describe('sort by live statistics', () => {
  test('throughput and latency sorts read the rolling statistics; unknown goes last', () => {
    const dummy = { url: 'http://127.0.0.1:9/v1' } as Upstream;
    const cfg = parseConfig(config('test/model', [{ id: 'one', upstream: dummy }, { id: 'two', upstream: dummy }, { id: 'three', upstream: dummy }]), 'test');
    const catalog = buildCatalog(cfg);
    const health = new HealthRegistry({ failureThreshold: 5, openMs: 30000, windowMs: 60000, recentFailureMs: 30000 });
    health.recordSuccess('one/one-model', { latencyMs: 1100, ttftMs: 100, outputTokens: 50 }); // 50 tok/s, ttft 100
    health.recordSuccess('two/two-model', { latencyMs: 700, ttftMs: 200, outputTokens: 100 }); // 200 tok/s, ttft 200
    const req = (sort: 'throughput' | 'latency'): ChatRequest => ({ model: 'test/model', messages: [{ role: 'user', content: 'x' }], provider: { sort } });
    const order = (sort: 'throughput' | 'latency') => planRoute(req(sort), { catalog, health, random: Math.random }, 10).endpoints.map((p) => p.target.provider.id);
    assert.deepEqual(order('throughput'), ['two', 'one', 'three']);
    assert.deepEqual(order('latency'), ['one', 'two', 'three']);
    assert.deepEqual(health.stats('two/two-model').throughput_last_30m, { p50: 200, p75: 200, p90: 200, p99: 200 });
  });
});

describe('exclusion reasons name what happened', () => {
  test('"cooling down after a rate limit" only after a rate limit; a 503 with Retry-After says so', async () => {
    const a = await startUpstream();
    const gw = await startGateway(config('test/model', [{ id: 'alpha', upstream: a }], { routing: { retry_after_cap_ms: 60000, recent_failure_ms: 0 } }));
    try {
      a.enqueue({ status: 503, headers: { 'retry-after': '30' }, json: { error: { message: 'overloaded' } } });
      assert.equal((await post(gw, { model: 'test/model', messages: msgs })).status, 503);
      const refused = (await (await post(gw, { model: 'test/model', messages: msgs })).json()) as Json;
      assert.equal(refused.error.code, 'endpoints_unavailable');
      assert.deepEqual(refused.error.metadata.excluded, [
        { endpoint: 'alpha/alpha-model', model: 'test/model', reason: 'cooldown', detail: 'cooling down: the upstream failed and asked for a pause (Retry-After)' },
      ]);
      assert.doesNotMatch(refused.error.message, /rate limit/);
      const ep = (await (await fetch(`${gw.baseURL}/models/test/model/endpoints`, { headers: { authorization: `Bearer ${gw.adminKey}` } })).json()) as Json;
      assert.equal(ep.data.endpoints[0].cooldown_reason, 'retry_after');
      assert.equal(a.requests.length, 1);
    } finally {
      await gw.close();
      await a.close();
    }
  });

  test('a rate limit says "cooling down after a rate limit"', () => {
    const dummy = { url: 'http://127.0.0.1:9/v1' } as Upstream;
    const catalog = buildCatalog(parseConfig(config('test/model', [{ id: 'one', upstream: dummy }, { id: 'two', upstream: dummy }]), 'test'));
    const health = new HealthRegistry({ failureThreshold: 5, openMs: 30000, windowMs: 60000, recentFailureMs: 30000 });
    health.recordFailure('one/one-model', { latencyMs: 5, rateLimited: true, retryAfterMs: 10_000 });
    health.recordFailure('two/two-model', { latencyMs: 5, rateLimited: false, retryAfterMs: 10_000 });
    const req: ChatRequest = { model: 'test/model', messages: [{ role: 'user', content: 'x' }] };
    const err = (() => {
      try {
        planRoute(req, { catalog, health, random: () => 0 }, 10);
      } catch (e) {
        return e as { metadata: Json };
      }
      throw new Error('expected no endpoint');
    })();
    assert.deepEqual(err.metadata.excluded.map((e: Json) => [e.endpoint, e.detail]), [
      ['one/one-model', 'cooling down after a rate limit'],
      ['two/two-model', 'cooling down: the upstream failed and asked for a pause (Retry-After)'],
    ]);
    assert.equal(health.stats('one/one-model').cooldown_reason, 'rate_limit');
  });
});
