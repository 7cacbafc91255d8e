/**
 * Redis is bounded: every command has a timeout, a frozen Redis turns requests from keys with
 * limits into 503 `limits_unavailable` at once (not a hang), the gateway waits for its Redis
 * connection before it listens, and `POST /v1/keys` never creates a key whose secret it cannot
 * return. Redis runs behind a TCP proxy on port 0 that can delay and freeze it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream } from '../helpers/replay-upstream.js';
import { createKey } from '../../src/store/keys.js';
import { freePort } from '../helpers/free-port.js';
import { redisReachable, TEST_REDIS_URL } from '../helpers/redis.js';

const REDIS = new URL(TEST_REDIS_URL);


/**
 * A TCP proxy to the test Redis. While frozen, nothing is forwarded either way (bytes are held,
 * not lost); `delayMs` holds the first bytes of each connection that long.
 */
async function startRedisProxy(delayMs = 0) {
  let frozen = false;
  const held: (() => void)[] = [];
  const sockets = new Set<net.Socket>();
  const forward = (from: net.Socket, to: net.Socket, opened: number) => {
    from.on('data', (chunk) => {
      const send = () => { if (!to.destroyed) to.write(chunk); };
      const wait = opened + delayMs - performance.now();
      if (frozen) held.push(send);
      else if (wait > 0) setTimeout(send, wait);
      else send();
    });
  };
  const server = net.createServer((client) => {
    const opened = performance.now();
    const redis = net.connect(Number(REDIS.port || 6379), REDIS.hostname);
    for (const s of [client, redis]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => { client.destroy(); redis.destroy(); sockets.delete(s); });
    }
    forward(client, redis, opened);
    forward(redis, client, opened);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    freeze: () => { frozen = true; },
    thaw: () => { frozen = false; for (const send of held.splice(0)) send(); },
    close: () => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

const completion = { json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } } };

async function chat(gw: TestGateway, key: string) {
  const started = performance.now();
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'x' }] }),
    signal: AbortSignal.timeout(5000),
  });
  const body = (await res.json()) as { error?: { code: string } };
  return { status: res.status, code: body.error?.code, ms: performance.now() - started };
}

test('Redis commands time out, the gateway waits for Redis at start, key creation never loses its secret', async (t) => {
  if (!(await redisReachable())) return t.skip(`Redis is not reachable at ${REDIS.href} (set OP_TEST_REDIS_URL)`);
  const upstream = await startUpstream();
  upstream.setDefault(completion);

  await t.test('the first request after start finds Redis connected', async () => {
    // Redis answers only 400 ms after each connection opens: without the wait at start the
    // first requests of a key with limits were 503 limits_unavailable.
    const slow = await startRedisProxy(400);
    const gw = await startGateway(oneModelConfig(upstream.url), { redisUrl: slow.url });
    try {
      const { secret } = await createKey(gw.store.db, 'limited', null, { rate_limit: { requests_per_minute: 100, tokens_per_minute: null } });
      const r = await chat(gw, secret);
      assert.equal(r.status, 200, `first request: ${r.code}`);
    } finally {
      await gw.close();
      await slow.close();
    }
  });

  await t.test('a frozen Redis gives 503 limits_unavailable after the command timeout, then at once', async () => {
    const proxy = await startRedisProxy();
    const gw = await startGateway(oneModelConfig(upstream.url, { root: { redis: { command_timeout_ms: 200 } } }), { redisUrl: proxy.url });
    try {
      const admin = { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' };
      const made = await fetch(`${gw.baseURL}/keys`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'limited', limit: 5, rate_limit: { requests_per_minute: 100 } }) });
      const secret = ((await made.json()) as { key: string }).key;
      assert.equal((await chat(gw, secret)).status, 200);

      proxy.freeze();
      const first = await chat(gw, secret);
      assert.equal(first.status, 503);
      assert.equal(first.code, 'limits_unavailable');
      assert.ok(first.ms < 1500, `first refusal took ${first.ms.toFixed(0)} ms`);
      const second = await chat(gw, secret);
      assert.equal(second.code, 'limits_unavailable');
      assert.ok(second.ms < 150, `second refusal took ${second.ms.toFixed(0)} ms`);
      t.diagnostic(`frozen Redis: first refusal ${first.ms.toFixed(0)} ms, next ${second.ms.toFixed(0)} ms`);

      // Keys without limits keep working; /ready says Redis is out.
      assert.equal((await chat(gw, gw.adminKey)).status, 200);
      assert.equal((await fetch(`${gw.origin}/ready`, { signal: AbortSignal.timeout(3000) })).status, 503);

      // A key with limits is created, and its secret returned, while Redis is frozen.
      const during = await fetch(`${gw.baseURL}/keys`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'made-while-frozen', limit: 1 }), signal: AbortSignal.timeout(3000) });
      assert.equal(during.status, 201);
      const created = (await during.json()) as { key: string; data: { usage: string; limit_remaining: string } };
      assert.match(created.key, /^op-/);
      assert.equal(created.data.usage, '0');
      assert.equal(created.data.limit_remaining, '1');

      // Key management does not depend on the limit store: list, read and update answer, with
      // usage from the records and a note.
      const listed = await fetch(`${gw.baseURL}/keys`, { headers: admin, signal: AbortSignal.timeout(5000) });
      assert.equal(listed.status, 200, await listed.clone().text());
      const limited = ((await listed.json()) as { data: { id: string; name: string; usage_note?: string }[] }).data.find((k) => k.name === 'limited')!;
      assert.match(limited.usage_note ?? '', /^the limit store is unavailable: usage is read from the written records/);
      const one = await fetch(`${gw.baseURL}/keys/${limited.id}`, { headers: admin, signal: AbortSignal.timeout(5000) });
      assert.equal(one.status, 200);
      const patched = await fetch(`${gw.baseURL}/keys/${limited.id}`, { method: 'PATCH', headers: admin, body: JSON.stringify({ limit: 7 }), signal: AbortSignal.timeout(5000) });
      assert.equal(patched.status, 200, await patched.clone().text());
      const data = ((await patched.json()) as { data: { limit: string | number; usage_note?: string } }).data;
      assert.equal(String(data.limit), '7');
      assert.ok(data.usage_note);

      proxy.thaw();
      let after = await chat(gw, secret);
      for (let i = 0; i < 30 && after.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        after = await chat(gw, secret);
      }
      assert.equal(after.status, 200, 'limits work again once Redis answers');
    } finally {
      await gw.close();
      await proxy.close();
    }
  });

  await upstream.close();
});


/** A private redis-server (never the shared one: this test freezes it with SIGSTOP). */
async function startPrivateRedis(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => {});
    const up = await r.connect().then(() => true, () => false);
    r.disconnect();
    if (up) return { url, child };
    await new Promise((res) => setTimeout(res, 50));
  }
  child.kill('SIGKILL');
  throw new Error('the private redis-server did not start');
}

const hasRedisServer = await new Promise<boolean>((resolve) => {
  const probe = spawn('redis-server', ['--version'], { stdio: 'ignore' });
  probe.on('error', () => resolve(false));
  probe.on('exit', (code) => resolve(code === 0));
});

test('a frozen Redis costs the response cache one command timeout, then misses at once until it answers again (issue 18 §3)', { skip: !hasRedisServer && 'redis-server is not installed' }, async (t) => {
  const COMMAND_TIMEOUT_MS = 800;
  const N = 8;
  const redis = await startPrivateRedis();
  const upstream = await startUpstream();
  upstream.setDefault(completion);
  const gw = await startGateway(oneModelConfig(upstream.url, { root: { retention: 30, redis: { command_timeout_ms: COMMAND_TIMEOUT_MS } } }), { redisUrl: redis.url });
  const cached = async (content: string) => {
    const started = performance.now();
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json', 'x-op-cache': 'true' },
      body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content }] }),
      signal: AbortSignal.timeout(10_000),
    });
    await res.text();
    return { status: res.status, cache: res.headers.get('x-op-cache'), ms: performance.now() - started };
  };
  let frozen = false;
  try {
    await cached('stored before the freeze');
    let hit = await cached('stored before the freeze');
    for (let i = 0; i < 50 && hit.cache !== 'HIT'; i++) {
      await new Promise((r) => setTimeout(r, 20));
      hit = await cached('stored before the freeze');
    }
    assert.equal(hit.cache, 'HIT', 'the cache works before the freeze');
    // A stored response with a cache entry, to delete while Redis is frozen.
    const admin = { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' };
    const made = await fetch(`${gw.baseURL}/responses`, { method: 'POST', headers: { ...admin, 'x-op-cache': 'true' }, body: JSON.stringify({ model: 'test/model', input: 'to delete' }) });
    assert.equal(made.status, 200);
    const responseId = ((await made.json()) as { id: string }).id;
    const deleteResponse = async () => {
      const res = await fetch(`${gw.baseURL}/responses/${responseId}`, { method: 'DELETE', headers: admin, signal: AbortSignal.timeout(5000) });
      return { status: res.status, code: ((await res.json()) as { error?: { code: string } }).error?.code };
    };

    redis.child.kill('SIGSTOP');
    frozen = true;
    const during = [];
    for (let i = 0; i < N; i++) during.push(await cached(i % 2 === 0 ? 'stored before the freeze' : `asked while frozen ${i}`));
    // Slow: waited out the command timeout (a cache lookup is the only Redis call of these requests).
    const slow = during.filter((r) => r.ms >= COMMAND_TIMEOUT_MS).length;
    t.diagnostic(`frozen Redis: ${slow} of ${N} cached requests waited the ${COMMAND_TIMEOUT_MS} ms command timeout; times ${during.map((r) => r.ms.toFixed(0)).join(', ')} ms`);
    assert.deepEqual(during.map((r) => r.status), Array(N).fill(200));
    assert.deepEqual(during.map((r) => r.cache), Array(N).fill('MISS'));
    assert.equal(slow, 1, 'only the first request waits the command timeout');
    // Its cache entry cannot be deleted: nothing is, and the client is told to retry.
    assert.deepEqual(await deleteResponse(), { status: 503, code: 'response_cache_unavailable' });
    assert.equal((await fetch(`${gw.baseURL}/responses/${responseId}`, { headers: admin })).status, 200, 'the stored response is still there');

    redis.child.kill('SIGCONT');
    frozen = false;
    let again = await cached('stored before the freeze');
    for (let i = 0; i < 50 && again.cache !== 'HIT'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      again = await cached('stored before the freeze');
    }
    assert.equal(again.cache, 'HIT', 'the cache answers again once Redis does');
    assert.deepEqual(await deleteResponse(), { status: 200, code: undefined });
    assert.equal((await fetch(`${gw.baseURL}/responses/${responseId}`, { headers: admin })).status, 404);
  } finally {
    if (frozen) redis.child.kill('SIGCONT');
    await gw.close();
    await upstream.close();
    redis.child.kill('SIGKILL');
  }
});
