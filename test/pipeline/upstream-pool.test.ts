/**
 * Local connection pools: waiting for a free slot (all `max_connections` busy, as long-lived
 * streams keep them) is not the upstream's first-token time, is bounded by
 * `timeouts.pool_wait_ms`, and running out is `connection_pool_exhausted` — retryable, scope
 * gateway, and not a failure of the provider.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { oneModelConfig, startGateway } from '../helpers/gateway.js';
import { startUpstream } from '../helpers/replay-upstream.js';
import { parseConfig } from '../../src/config/load.js';

const chunk = (content: string) => JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] });
/** A stream of three chunks 300 ms apart: it holds its connection about 600 ms. */
const finish = JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
const slowStream = { sse: [chunk('a'), chunk('b'), chunk('c'), finish], delayMs: 200 };

function streamChat(baseURL: string, key: string) {
  return fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'test/model', stream: true, messages: [{ role: 'user', content: 'x' }] }),
  });
}

test('the default pool is large enough for thousands of streams', () => {
  const config = parseConfig({ providers: [{ id: 'p', kind: 'openai', base_url: 'http://127.0.0.1:1/v1' }] }, 'test');
  assert.equal(config.providers[0]!.max_connections, 4096);
  assert.equal(config.providers[0]!.timeouts.pool_wait_ms, 10_000);
});

test('waiting for a pool slot does not count as first-token time', async () => {
  const upstream = await startUpstream();
  upstream.setDefault(slowStream);
  const gw = await startGateway(oneModelConfig(upstream.url, { provider: { max_connections: 1, timeouts: { first_token_ms: 400, pool_wait_ms: 3000 } } }));
  try {
    const [a, b] = await Promise.all([streamChat(gw.baseURL, gw.adminKey), new Promise((r) => setTimeout(r, 50)).then(() => streamChat(gw.baseURL, gw.adminKey))]);
    const [ta, tb] = await Promise.all([a.text(), b.text()]);
    assert.equal(a.status, 200);
    // B waited about 600 ms for A's connection, longer than first_token_ms: still served.
    assert.equal(b.status, 200, tb);
    assert.match(ta, /"content":"c"/);
    assert.match(tb, /"content":"c"/);
    assert.match(tb, /"finish_reason":"stop"/);
    assert.doesNotMatch(tb, /upstream_timeout/);
    // The wait is measured on its own, for operators.
    const metrics = await (await fetch(`${gw.origin}/metrics`)).text();
    assert.match(metrics, /^opinference_upstream_pool_wait_seconds_count\{provider="up"\} 1$/m);
  } finally {
    await gw.close();
    await upstream.close();
  }
});

test('a pool that stays full is connection_pool_exhausted, not a provider failure', async () => {
  const upstream = await startUpstream();
  upstream.setDefault(slowStream);
  const gw = await startGateway(oneModelConfig(upstream.url, { provider: { max_connections: 1, timeouts: { pool_wait_ms: 150 } } }));
  try {
    const a = streamChat(gw.baseURL, gw.adminKey);
    await new Promise((r) => setTimeout(r, 50));
    const b = await streamChat(gw.baseURL, gw.adminKey);
    const body = (await b.json()) as { error: { code: string; kind: string; scope: string; message: string } };
    assert.equal(b.status, 503);
    assert.equal(b.headers.get('retry-after'), '1');
    assert.deepEqual({ code: body.error.code, kind: body.error.kind, scope: body.error.scope }, { code: 'connection_pool_exhausted', kind: 'retryable', scope: 'gateway' });
    assert.match(body.error.message, /all 1 upstream connections to up \(max_connections\) stayed busy for 150 ms/);
    assert.match(await (await a).text(), /"finish_reason":"stop"/);
    const stats = gw.gateway.runtime().health.stats('up/upstream-model');
    assert.equal(stats.last_failure_at, null, 'the provider is not blamed');
    assert.equal(stats.uptime_last_5m, 1);
    assert.equal(upstream.requests.length, 1);
  } finally {
    await gw.close();
    await upstream.close();
  }
});

test('connection slots: first come first served, an abandoned wait gives its turn away', async () => {
  const { ConnectionSlots } = await import('../../src/upstream/connection-slots.js');
  const waits: number[] = [];
  const slots = new ConnectionSlots(1, (ms) => waits.push(ms));
  const first = await slots.acquire('p', 0, () => []);
  const gone = new AbortController();
  const order: string[] = [];
  const abandoned = slots.acquire('p', 0, () => [gone.signal]).then(() => order.push('abandoned'), (e: Error & { code?: string }) => order.push(`abandoned: ${e.code}`));
  const second = slots.acquire('p', 0, () => []).then((s) => { order.push('second'); return s; });
  gone.abort();
  await abandoned;
  first.release();
  first.release(); // idempotent: frees one slot only
  const s2 = await second;
  assert.deepEqual(order, ['abandoned: client_closed_request', 'second']);
  assert.equal(slots.busy, 1);
  assert.equal(waits.length, 1);
  s2.release();
  assert.equal(slots.busy, 0);
});
