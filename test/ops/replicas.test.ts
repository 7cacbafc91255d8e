/**
 * Replicas (issue 10 item 2): two gateways in this process on one database (a PostgreSQL schema
 * under `npm run test:pg`, else one SQLite file) and the local Redis (a key prefix of their own,
 * so parallel test runs do not collide) behave as one.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { parseConfig } from '../../src/config/load.js';
import { buildGateway, type Gateway } from '../../src/server/app.js';
import type { OpenDatabase } from '../../src/store/database.js';
import { createKey } from '../../src/store/keys.js';
import { migrate } from '../../src/store/migrations.js';
import { randomId } from '../../src/util/ids.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig } from '../helpers/gateway.js';
import { createTestDatabase, TEST_DIALECT } from '../helpers/test-database.js';
import { freePort } from '../helpers/free-port.js';
import { until } from '../helpers/poll.js';
import { redisReachable, TEST_REDIS_URL } from '../helpers/redis.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const REDIS_URL = TEST_REDIS_URL;
const skip = (await redisReachable()) ? false : 'Redis not reachable (OP_TEST_REDIS_URL)';

interface Replica {
  gateway: Gateway;
  store: OpenDatabase;
  origin: string;
  logs: Json[];
}

/**
 * Two (or more) gateways sharing one fresh test database (a PostgreSQL schema with
 * OP_TEST_DATABASE_URL, else one SQLite file, as `serve --workers` shares it) and one Redis prefix.
 */
async function startFleet(n: number, config: unknown, options: { purgeIntervalMs?: number; redisUrl?: string } = {}) {
  const database = await createTestDatabase();
  const prefix = `op-test:${randomId(12)}:`;
  const replicas: Replica[] = [];
  for (let i = 0; i < n; i++) {
    const store = database.open();
    await migrate(store.db);
    const logs: Json[] = [];
    const stream = new Writable({ write(chunk, _enc, done) { for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line) as Json); done(); } });
    const gateway = buildGateway({
      loaded: { config: parseConfig(config, 'test config'), source: 'test' },
      db: store.db,
      adminKey: 'admin-test-key',
      logger: { level: 'info', stream },
      redisUrl: options.redisUrl ?? REDIS_URL,
      redisPrefix: prefix,
      purgeIntervalMs: options.purgeIntervalMs ?? 0,
    });
    await gateway.app.listen({ port: 0, host: '127.0.0.1' });
    replicas.push({ gateway, store, origin: `http://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}`, logs });
  }
  return {
    replicas,
    async close() {
      for (const r of replicas) {
        await r.gateway.close();
        await r.store.close();
      }
      await database.drop();
    },
  };
}

const chat = (origin: string, key: string) =>
  fetch(`${origin}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }] }) });

const answer = { json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } } };

/** Poll `check` every 5 ms until it holds; resolves with the ms it took, rejects after `limitMs`. */
const within = (limitMs: number, check: () => Promise<boolean>): Promise<number> => until('the check', check, limitMs, 5);

describe('replicas share endpoint health and key changes', { skip }, () => {
  let up: Upstream;
  let fleet: Awaited<ReturnType<typeof startFleet>>;
  before(async () => {
    up = await startUpstream();
    fleet = await startFleet(2, oneModelConfig(up.url, { root: { routing: { circuit_breaker: { failure_threshold: 2, open_ms: 60_000 }, retry_after_cap_ms: 60_000, recent_failure_ms: 0 } } }));
  });
  after(async () => {
    await fleet?.close();
    await up?.close();
  });

  test('a breaker opened on A is open on B within 1 s, and B sends nothing upstream', async (t) => {
    const [a, b] = fleet.replicas as [Replica, Replica];
    up.enqueue({ status: 500, text: 'down' }, { status: 500, text: 'down' });
    assert.equal((await chat(a.origin, 'admin-test-key')).status, 502);
    assert.equal((await chat(a.origin, 'admin-test-key')).status, 502);
    const endpointsOf = async (r: Replica) => ((await (await fetch(`${r.origin}/v1/models/test/model/endpoints`, { headers: { authorization: 'Bearer admin-test-key' } })).json()) as Json).data.endpoints[0];
    assert.equal((await endpointsOf(a)).circuit, 'open');
    const ms = await within(1000, async () => (await endpointsOf(b)).circuit === 'open');
    t.diagnostic(`breaker open on B ${ms} ms after A's second failure answered`);
    const seen = up.requests.length;
    const refused = await chat(b.origin, 'admin-test-key');
    assert.equal(refused.status, 503);
    assert.equal(((await refused.json()) as Json).error.code, 'endpoints_unavailable');
    assert.equal(up.requests.length, seen);
    const stats = await endpointsOf(b);
    assert.equal(stats.requests_last_30m, 2); // A's two failures are in B's statistics
    assert.equal(stats.uptime_last_30m, 0);
  });

  test('a key disabled through A is refused by B within 1 s', async (t) => {
    const [a, b] = fleet.replicas as [Replica, Replica];
    up.setDefault(answer);
    const { key, secret } = await createKey(a.store.db, 'fleet');
    const ok = await fetch(`${b.origin}/v1/key`, { headers: { authorization: `Bearer ${secret}` } });
    assert.equal(ok.status, 200); // now in B's key cache
    const patched = await fetch(`${a.origin}/v1/keys/${key.id}`, { method: 'PATCH', headers: { authorization: 'Bearer admin-test-key', 'content-type': 'application/json' }, body: JSON.stringify({ disabled: true }) });
    assert.equal(patched.status, 200);
    const ms = await within(1000, async () => (await fetch(`${b.origin}/v1/key`, { headers: { authorization: `Bearer ${secret}` } })).status === 401);
    t.diagnostic(`key refused by B ${ms} ms after A answered the PATCH`);
    const body = (await (await fetch(`${b.origin}/v1/key`, { headers: { authorization: `Bearer ${secret}` } })).json()) as Json;
    assert.equal(body.error.code, 'invalid_api_key');
  });
});

describe('a cooldown after a 429 with Retry-After on one replica applies on the others', { skip }, () => {
  test('B cools down within 1 s, for the time A was told, and sends nothing upstream', async (t) => {
    const up = await startUpstream();
    const fleet = await startFleet(2, oneModelConfig(up.url, { root: { routing: { retry_after_cap_ms: 60_000, recent_failure_ms: 0 } } }));
    try {
      const [a, b] = fleet.replicas as [Replica, Replica];
      up.enqueue({ status: 429, headers: { 'retry-after': '30' }, json: { error: { message: 'slow down', type: 'rate_limit' } } });
      assert.equal((await chat(a.origin, 'admin-test-key')).status, 429);
      const endpointsOf = async (r: Replica) => ((await (await fetch(`${r.origin}/v1/models/test/model/endpoints`, { headers: { authorization: 'Bearer admin-test-key' } })).json()) as Json).data.endpoints[0];
      const ms = await within(1000, async () => (await endpointsOf(b)).cooldown_reason === 'rate_limit');
      t.diagnostic(`cooldown on B ${ms} ms after A's 429 answered`);
      const until = Date.parse((await endpointsOf(b)).cooldown_until as string) - Date.now();
      assert.ok(until > 28_000 && until <= 30_000, `cooldown left on B: ${until} ms`);
      const seen = up.requests.length;
      assert.equal((await chat(b.origin, 'admin-test-key')).status, 503);
      assert.equal(up.requests.length, seen);
    } finally {
      await fleet.close();
      await up.close();
    }
  });
});

describe('background jobs run once across replicas', { skip: skip || (TEST_DIALECT !== 'postgres' && 'PostgreSQL only (npm run test:pg): the lease is a PostgreSQL advisory lock; with SQLite, serve --workers runs jobs in worker 0') }, () => {
  test('two gateways whose purge timers fire together purge once per round', async () => {
    const fleet = await startFleet(2, {}, { purgeIntervalMs: 100 });
    try {
      await new Promise((r) => setTimeout(r, 550));
      const runs = fleet.replicas.map((r) => r.logs.filter((l) => l.msg === 'retention purge').length);
      // One replica holds the lease and runs every round; the other never does.
      assert.equal(runs.filter((n) => n === 0).length, 1, `runs per replica: ${runs.join(', ')}`);
      assert.ok(Math.max(...runs) >= 3, `runs per replica: ${runs.join(', ')}`);
    } finally {
      await fleet.close();
    }
  });

  test('when the holder stops, the other takes the jobs over', async () => {
    const fleet = await startFleet(2, {}, { purgeIntervalMs: 100 });
    try {
      await new Promise((r) => setTimeout(r, 300));
      const holder = fleet.replicas.findIndex((r) => r.logs.some((l) => l.msg === 'retention purge'));
      assert.notEqual(holder, -1);
      const other = fleet.replicas[1 - holder]!;
      await fleet.replicas[holder]!.gateway.close();
      await fleet.replicas[holder]!.store.close();
      fleet.replicas.splice(holder, 1);
      await within(1000, async () => other.logs.some((l) => l.msg === 'retention purge'));
    } finally {
      await fleet.close();
    }
  });
});


/** A private redis-server (Debian's), so that the test can stop and restart it. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await until('redis-server', () => redisReachable(`redis://127.0.0.1:${port}`), 5000, 5);
  return child;
}

const redisServer = spawn('redis-server', ['--version']);
const hasRedisServer = await new Promise<boolean>((resolve) => {
  redisServer.on('error', () => resolve(false));
  redisServer.on('exit', (code) => resolve(code === 0));
});

describe('Redis down: health sharing degrades to per replica and recovers by itself', { skip: skip || (!hasRedisServer && 'redis-server not installed') }, () => {
  test('outage logged once, breaker stays per replica, sharing resumes without a restart', async (t) => {
    const port = await freePort();
    let redis = await startRedis(port);
    const up = await startUpstream();
    const fleet = await startFleet(2, oneModelConfig(up.url, { root: { routing: { circuit_breaker: { failure_threshold: 2, open_ms: 200 }, retry_after_cap_ms: 60_000, recent_failure_ms: 0 } } }), { redisUrl: `redis://127.0.0.1:${port}` });
    const [a, b] = fleet.replicas as [Replica, Replica];
    const endpointsOf = async (r: Replica) => ((await (await fetch(`${r.origin}/v1/models/test/model/endpoints`, { headers: { authorization: 'Bearer admin-test-key' } })).json()) as Json).data.endpoints[0];
    try {
      redis.kill('SIGKILL');
      await new Promise((r) => redis.on('exit', r));
      up.enqueue({ status: 500, text: 'down' }, { status: 500, text: 'down' }, { status: 500, text: 'down' });
      for (let i = 0; i < 2; i++) assert.equal((await chat(a.origin, 'admin-test-key')).status, 502);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(a.logs.filter((l) => /endpoint health sharing unavailable/.test(l.msg)).length, 1);
      assert.equal((await endpointsOf(b)).requests_last_30m, 0); // B kept its own (empty) health
      assert.equal((await chat(a.origin, 'admin-test-key')).status, 502); // A's half-open probe fails: still per replica
      redis = await startRedis(port);
      // Sharing resumes by itself: A's next outcomes reach B once both connections are back.
      up.setDefault(answer);
      const ms = await within(15_000, async () => {
        await chat(a.origin, 'admin-test-key');
        return (await endpointsOf(b)).requests_last_30m > 0;
      });
      t.diagnostic(`health sharing back ${ms} ms after Redis restarted`);
      await within(1000, async () => a.logs.some((l) => l.msg === 'endpoint health sharing resumed'));
    } finally {
      await fleet.close();
      await up.close();
      redis.kill('SIGKILL');
    }
  });
});

