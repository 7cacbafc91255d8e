/**
 * Alerts (issue 23 item 5): a webhook receiver on port 0 verifying the HMAC signature; a key's
 * budget crossing 0.5 and 1.0 delivered once each; a team's budget crossing delivered exactly
 * once with two gateways on one database; a breaker opening and closing; a receiver answering
 * 500 then 200 retried; the Slack format; the API's webhooks audited; the delivery log.
 * SQLite, or PostgreSQL with OP_TEST_DATABASE_URL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../src/config/load.js';
import { buildGateway, type Gateway } from '../../src/server/app.js';
import type { OpenDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { createTestDatabase } from '../helpers/test-database.js';
import { gatewayLogStream } from '../helpers/test-output.js';
import { until } from '../helpers/poll.js';
import { AlertDispatcher } from '../../src/alerts/alert-dispatcher.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const SECRET = 'whsec-test-0123456789';
process.env.OP_TEST_ALERT_SECRET = SECRET;

/** One request the receiver got, with whether its signature checked out. */
interface Received {
  headers: IncomingHttpHeaders;
  body: Json;
  signed: boolean;
  path: string;
}

/** A webhook receiver on port 0: answers the queued statuses first, then 200; verifies `x-op-signature`. */
async function startReceiver() {
  const received: Received[] = [];
  const statuses: number[] = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const ts = String(req.headers['x-op-timestamp'] ?? '');
      const expected = Buffer.from(`sha256=${createHmac('sha256', SECRET).update(`${ts}.${raw}`).digest('hex')}`);
      const got = Buffer.from(String(req.headers['x-op-signature'] ?? ''));
      received.push({ headers: req.headers, body: JSON.parse(raw) as Json, signed: got.length === expected.length && timingSafeEqual(got, expected), path: req.url ?? '' });
      res.statusCode = statuses.shift() ?? 200;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, received, statuses, close: () => new Promise<void>((r) => server.close(() => r())) };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

const completion = (prompt: number, completionTokens: number) => ({
  json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens } },
});
// $1000 per 1M tokens both ways: one token costs exactly $0.001; a request of 20 + 5 tokens $0.025.
const pricey = (url: string, root: Record<string, unknown> = {}) => oneModelConfig(url, { endpoint: { pricing: { prompt: 1000, completion: 1000 }, max_completion_tokens: 4096 }, root });
const alertsConfig = (receiver: string, extra: Record<string, unknown> = {}) => ({ webhooks: [{ id: 'ops', url: `${receiver}/ops`, secret_env: 'OP_TEST_ALERT_SECRET' }], budget_fractions: [0.5, 1], retry_base_ms: 100, sweep_interval_ms: 200, ...extra });

const call = async (origin: string, key: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${origin}/v1${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Json };
};
const chat = { model: 'test/model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 };

describe('alerts from one gateway', () => {
  let upstream: Upstream;
  let receiver: Receiver;
  let gw: TestGateway;
  const admin = (m: string, p: string, b?: unknown) => call(gw.origin, gw.adminKey, m, p, b);
  before(async () => {
    upstream = await startUpstream();
    receiver = await startReceiver();
    gw = await startGateway(pricey(upstream.url, { alerts: alertsConfig(receiver.url), routing: { circuit_breaker: { failure_threshold: 1, open_ms: 300 }, retry_after_cap_ms: 0, recent_failure_ms: 0 } }));
  });
  after(async () => {
    await gw.close();
    await receiver.close();
    await upstream.close();
  });

  test("a key's budget crossing 0.5 and 1.0: one signed JSON delivery each, {type, created_at, data}", async () => {
    const made = await admin('POST', '/keys', { name: 'metered', limit: '0.1', limit_reset: 'monthly' });
    const { key, data: k } = made.body;
    upstream.setDefault(completion(20, 5));
    try {
      for (let i = 0; i < 4; i++) {
        const r = await call(gw.origin, key, 'POST', '/chat/completions', chat);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        if (i === 1) await until('the 0.5 alert', () => receiver.received.length === 1);
      }
      await until('the 1.0 alert', () => receiver.received.length === 2);
    } finally {
      upstream.setDefault(undefined);
    }
    await gw.gateway.alerts.idle();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(receiver.received.length, 2);
    for (const r of receiver.received) {
      assert.equal(r.signed, true, 'the HMAC-SHA256 signature verifies');
      assert.equal(r.path, '/ops');
      assert.equal(r.headers['x-op-event'], 'budget.threshold');
      assert.match(String(r.headers['x-op-delivery']), /^dlv_/);
      assert.deepEqual(Object.keys(r.body).sort(), ['created_at', 'data', 'id', 'type']);
      assert.equal(r.body.type, 'budget.threshold');
      assert.ok(Math.abs(Date.parse(r.body.created_at as string) - Date.now()) < 60_000);
    }
    const monthStart = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1)).toISOString();
    assert.deepEqual(receiver.received.map((r) => r.body.data), [
      { level: 'key', id: k.id, name: 'metered', fraction: 0.5, limit: '0.1', spent: '0.05', limit_reset: 'monthly', period_start: monthStart },
      { level: 'key', id: k.id, name: 'metered', fraction: 1, limit: '0.1', spent: '0.1', limit_reset: 'monthly', period_start: monthStart },
    ]);
    const log = (await admin('GET', '/alerts/deliveries?type=budget.threshold')).body.data as Json[];
    assert.deepEqual(log.map((d) => [d.webhook_id, d.status, d.attempts, d.last_status, d.event.data.fraction]), [['ops', 'delivered', 1, 200, 1], ['ops', 'delivered', 1, 200, 0.5]]);
    assert.equal(log[1]!.event.dedupe_key, `budget:key:${k.id}:${Date.parse(monthStart)}:0.5`);
  });

  test('a Slack webhook made through the API (audited), and a breaker opening then closing', async () => {
    const made = await admin('POST', '/alerts/webhooks', { url: `${receiver.url}/slack`, format: 'slack', events: ['breaker.opened', 'breaker.closed'] });
    assert.equal(made.status, 201);
    const hook = made.body.data;
    assert.match(hook.id, /^whk_/);
    assert.deepEqual({ ...hook, id: undefined, created_at: undefined }, { id: undefined, url: `${receiver.url}/slack`, format: 'slack', secret_env: null, events: ['breaker.opened', 'breaker.closed'], source: 'api', created_at: undefined });
    const listed = (await admin('GET', '/alerts/webhooks')).body.data as Json[];
    assert.deepEqual(listed.map((w) => [w.id, w.source]), [['ops', 'config'], [hook.id, 'api']]);
    const audit = (await admin('GET', `/audit?target=alert_webhook:${hook.id}`)).body.data as Json[];
    assert.deepEqual(audit.map((r) => [r.action, r.before, r.after?.url]), [['alert_webhook.create', null, `${receiver.url}/slack`]]);
    const bad = await admin('POST', '/alerts/webhooks', { url: 'ftp://x', format: 'json' });
    assert.deepEqual([bad.status, bad.body.error.param], [400, 'url']);
    const badEvent = await admin('POST', '/alerts/webhooks', { url: receiver.url, events: ['nope'] });
    assert.deepEqual([badEvent.status, badEvent.body.error.param], [400, 'events[0]']);
    const configOne = await admin('PATCH', '/alerts/webhooks/ops', { format: 'slack' });
    assert.deepEqual([configOne.status, configOne.body.error.param], [400, 'id']);

    receiver.received.length = 0;
    const { secret } = await gw.createKey('breaker');
    upstream.enqueue({ status: 500, json: { error: { message: 'down' } } });
    const failed = await call(gw.origin, secret, 'POST', '/chat/completions', chat);
    assert.ok(failed.status >= 500, String(failed.status));
    await until('the breaker.opened alerts', () => receiver.received.length === 2);
    await new Promise((r) => setTimeout(r, 350));
    upstream.enqueue(completion(1, 1));
    const ok = await call(gw.origin, secret, 'POST', '/chat/completions', chat);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    await until('the breaker.closed alerts', () => receiver.received.length === 4);
    await gw.gateway.alerts.idle();
    // An endpoint's id is `<provider>/<upstream model>`.
    const ep = 'up/upstream-model';
    const byPath = (p: string) => receiver.received.filter((r) => r.path === p);
    assert.deepEqual(byPath('/ops').map((r) => [r.body.type, r.body.data, r.signed]), [
      ['breaker.opened', { endpoint: ep, state: 'open' }, true],
      ['breaker.closed', { endpoint: ep, state: 'closed' }, true],
    ]);
    const slack = byPath('/slack');
    assert.equal(slack.length, 2);
    for (const s of slack) assert.equal(s.headers['x-op-signature'], undefined, 'no secret_env: unsigned');
    assert.deepEqual(slack[0]!.body, {
      text: `:red_circle: opinference: the circuit breaker of endpoint ${ep} opened: requests go to other endpoints until it recovers`,
      blocks: [{ type: 'section', text: { type: 'mrkdwn', text: `:red_circle: opinference: the circuit breaker of endpoint ${ep} opened: requests go to other endpoints until it recovers` } }],
    });
    assert.equal(slack[1]!.body.text, `:large_green_circle: opinference: the circuit breaker of endpoint ${ep} closed: the endpoint serves again`);
    const deleted = await admin('DELETE', `/alerts/webhooks/${hook.id}`);
    assert.deepEqual(deleted.body.data, { id: hook.id, deleted: true });
    assert.deepEqual(((await admin('GET', `/audit?target=alert_webhook:${hook.id}`)).body.data as Json[]).map((r) => r.action), ['alert_webhook.delete', 'alert_webhook.create']);
  });

  test('a receiver answering 500 is retried with backoff until it answers 200', async () => {
    receiver.received.length = 0;
    receiver.statuses.push(500, 500);
    const { secret } = await gw.createKey('retry');
    upstream.enqueue({ status: 500, json: { error: { message: 'down again' } } });
    await call(gw.origin, secret, 'POST', '/chat/completions', chat);
    await until('three attempts', () => receiver.received.length === 3, 10_000);
    await gw.gateway.alerts.idle();
    const [first, second, third] = receiver.received as [Received, Received, Received];
    assert.equal(first.headers['x-op-delivery'], third.headers['x-op-delivery']);
    assert.deepEqual(first.body, third.body, 'every attempt sends the same event');
    assert.equal(second.signed && third.signed, true);
    const row = ((await admin('GET', '/alerts/deliveries?type=breaker.opened&limit=1')).body.data as Json[])[0]!;
    await until('the delivery marked delivered', async () => (((await admin('GET', '/alerts/deliveries?type=breaker.opened&limit=1')).body.data as Json[])[0]!.status === 'delivered'));
    const done = ((await admin('GET', '/alerts/deliveries?type=breaker.opened&limit=1')).body.data as Json[])[0]!;
    assert.equal(row.id, third.headers['x-op-delivery']);
    assert.deepEqual([done.status, done.attempts, done.last_status, done.last_error], ['delivered', 3, 200, null]);
    assert.deepEqual(((await admin('GET', '/alerts/deliveries?status=failed')).body.data as Json[]).length, 0);
    const bad = await admin('GET', '/alerts/deliveries?status=lost');
    assert.deepEqual([bad.status, bad.body.error.param], [400, 'status']);
  });
});

interface Replica {
  gateway: Gateway;
  store: OpenDatabase;
  origin: string;
}

describe("a team's budget through two gateways on one database", () => {
  let upstream: Upstream;
  let receiver: Receiver;
  const replicas: Replica[] = [];
  let drop: () => Promise<void>;
  before(async () => {
    upstream = await startUpstream();
    receiver = await startReceiver();
    const database = await createTestDatabase();
    drop = () => database.drop();
    for (let i = 0; i < 2; i++) {
      const store = database.open();
      await migrate(store.db);
      const config = parseConfig({ ...pricey(upstream.url, { alerts: alertsConfig(receiver.url) }), routing: { circuit_breaker: { failure_threshold: 1000 } }, server: { overload: { max_event_loop_delay_ms: 0 } } }, 'test config');
      const gateway = buildGateway({ loaded: { config, source: 'test' }, db: store.db, adminKey: 'admin-test-key', logger: { level: 'warn', stream: gatewayLogStream() }, purgeIntervalMs: 0 });
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
    await receiver?.close();
    await upstream?.close();
  });

  test('0.5 and 1.0 are delivered exactly once each, though both gateways see both crossings', async () => {
    const [a, b] = replicas as [Replica, Replica];
    const team = (await call(a.origin, 'admin-test-key', 'POST', '/teams', { name: 'fleet', limit: '0.1', limit_reset: 'monthly' })).body.data;
    const k1 = (await call(a.origin, 'admin-test-key', 'POST', '/keys', { name: 'one', team: team.id })).body.key as string;
    const k2 = (await call(b.origin, 'admin-test-key', 'POST', '/keys', { name: 'two', team: team.id })).body.key as string;
    upstream.setDefault(completion(20, 5));
    const through = async (r: Replica, key: string) => {
      const res = await call(r.origin, key, 'POST', '/chat/completions', chat);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      await r.gateway.runtime().writer.flush();
      await new Promise((done) => setTimeout(done, 150));
      await r.gateway.alerts.idle();
    };
    try {
      await through(a, k1);
      await through(a, k1); // $0.05: a records 0.5
      await through(b, k2); // b sees $0.075 (the records and its own): 0.5 again, a duplicate
      await through(b, k2); // $0.1: b records 1.0
      await through(a, k1); // a's own limit store still thinks $0.075 is spent: it lets one more through, and sees 1.0 again
    } finally {
      upstream.setDefault(undefined);
    }
    await new Promise((r) => setTimeout(r, 500));
    for (const r of replicas) await r.gateway.alerts.idle();
    const budget = receiver.received.filter((r) => r.body.type === 'budget.threshold');
    assert.deepEqual(budget.map((r) => [r.body.data.level, r.body.data.id, r.body.data.name, r.body.data.fraction, r.signed]), [
      ['team', team.id, 'fleet', 0.5, true],
      ['team', team.id, 'fleet', 1, true],
    ]);
    assert.deepEqual([a.gateway.alerts.stats.recorded, b.gateway.alerts.stats.recorded], [1, 1]);
    assert.deepEqual([a.gateway.alerts.stats.duplicates, b.gateway.alerts.stats.duplicates], [1, 1]);
    const events = await a.store.db.selectFrom('alert_events').select(['dedupe_key']).orderBy('created_at').execute();
    assert.equal(events.length, 2);
    const deliveries = await a.store.db.selectFrom('alert_deliveries').select(['status', 'attempts']).execute();
    assert.deepEqual(deliveries, [{ status: 'delivered', attempts: 1 }, { status: 'delivered', attempts: 1 }]);
  });
});

describe('records unwritable', () => {
  let receiver: Receiver;
  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
  });

  const dispatcher = (db: OpenDatabase['db'], problem: { now: string | null }) =>
    new AlertDispatcher({
      db,
      config: () => parseConfig({ alerts: alertsConfig(receiver.url, { sweep_interval_ms: 60_000 }) }, 'test').alerts,
      log: { info: () => {}, warn: () => {}, error: () => {} },
      spent: async () => 0n,
      recordsProblem: () => problem.now,
    });

  test("the record writer's problem state is an event when it starts and when it ends, logged as deliveries", async () => {
    const database = await createTestDatabase();
    const store = database.open();
    await migrate(store.db);
    const problem: { now: string | null } = { now: null };
    const alerts = dispatcher(store.db, problem);
    try {
      alerts.start();
      problem.now = 'generation records cannot be written: SQLITE_FULL: database or disk is full';
      await until('records.unwritable', () => receiver.received.length === 1, 5_000);
      problem.now = null;
      await until('records.writable', () => receiver.received.length === 2, 5_000);
      await alerts.idle();
      assert.deepEqual(receiver.received.map((r) => [r.body.type, r.body.data.problem, r.signed]), [
        ['records.unwritable', 'generation records cannot be written: SQLITE_FULL: database or disk is full', true],
        ['records.writable', null, true],
      ]);
      const rows = await store.db.selectFrom('alert_deliveries').select(['status']).execute();
      assert.deepEqual(rows, [{ status: 'delivered' }, { status: 'delivered' }]);
    } finally {
      await alerts.close();
      await store.close();
      await database.drop();
    }
  });

  test('with the database itself unusable, the event is sent from memory', async () => {
    receiver.received.length = 0;
    const database = await createTestDatabase();
    const store = database.open();
    await migrate(store.db);
    await store.close(); // every query fails from now on
    const problem: { now: string | null } = { now: null };
    const alerts = dispatcher(store.db, problem);
    try {
      alerts.start();
      problem.now = 'generation records cannot be written: the database is gone';
      await until('records.unwritable', () => receiver.received.length === 1, 5_000);
      await alerts.idle();
      assert.equal(receiver.received[0]!.body.type, 'records.unwritable');
      assert.equal(receiver.received[0]!.signed, true);
      assert.match(String(receiver.received[0]!.headers['x-op-delivery']), /^dlv_local_/);
      assert.equal(alerts.stats.delivered, 1);
    } finally {
      await alerts.close();
      await database.drop();
    }
  });
});

describe("a model's error rate", () => {
  let upstream: Upstream;
  let receiver: Receiver;
  let gw: TestGateway;
  before(async () => {
    upstream = await startUpstream();
    receiver = await startReceiver();
    gw = await startGateway(pricey(upstream.url, { alerts: alertsConfig(receiver.url, { error_rate: { threshold: 0.5, min_requests: 4, window_ms: 60_000 } }) }));
  });
  after(async () => {
    await gw.close();
    await receiver.close();
    await upstream.close();
  });

  test('4 failures of 4 is error_rate.high; 8 successes after bring it under the threshold: error_rate.normal', async () => {
    const { secret } = await gw.createKey('rate');
    for (let i = 0; i < 4; i++) {
      upstream.enqueue({ status: 500, json: { error: { message: 'down' } } });
      const r = await call(gw.origin, secret, 'POST', '/chat/completions', chat);
      assert.ok(r.status >= 500, String(r.status));
    }
    await until('error_rate.high', () => receiver.received.length === 1, 5_000);
    for (let i = 0; i < 8; i++) {
      upstream.enqueue(completion(1, 1));
      assert.equal((await call(gw.origin, secret, 'POST', '/chat/completions', chat)).status, 200);
    }
    await until('error_rate.normal', () => receiver.received.length === 2, 5_000);
    await gw.gateway.alerts.idle();
    assert.deepEqual(receiver.received.map((r) => [r.body.type, r.body.data, r.signed]), [
      ['error_rate.high', { model: 'test/model', requests: 4, errors: 4, rate: 1, threshold: 0.5, window_ms: 60_000 }, true],
      ['error_rate.normal', { model: 'test/model', requests: 12, errors: 4, rate: 4 / 12, threshold: 0.5, window_ms: 60_000 }, true],
    ]);
  });
});

describe("an endpoint's breaker opening on two gateways on one database", () => {
  let upstream: Upstream;
  let receiver: Receiver;
  const replicas: Replica[] = [];
  let drop: () => Promise<void>;
  before(async () => {
    upstream = await startUpstream();
    receiver = await startReceiver();
    const database = await createTestDatabase();
    drop = () => database.drop();
    for (let i = 0; i < 2; i++) {
      const store = database.open();
      await migrate(store.db);
      const config = parseConfig({ ...pricey(upstream.url, { alerts: alertsConfig(receiver.url) }), routing: { max_attempts: 1, circuit_breaker: { failure_threshold: 1, open_ms: 300 }, retry_after_cap_ms: 0, recent_failure_ms: 0 }, server: { overload: { max_event_loop_delay_ms: 0 } } }, 'test config');
      const gateway = buildGateway({ loaded: { config, source: 'test' }, db: store.db, adminKey: 'admin-test-key', logger: { level: 'warn', stream: gatewayLogStream() }, purgeIntervalMs: 0 });
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
    await receiver?.close();
    await upstream?.close();
  });

  test('both breakers open and close: one breaker.opened and one breaker.closed for the fleet', async () => {
    const [a, b] = replicas as [Replica, Replica];
    const key = (await call(a.origin, 'admin-test-key', 'POST', '/keys', { name: 'both' })).body.key as string;
    for (const r of [a, b]) {
      upstream.enqueue({ status: 500, json: { error: { message: 'down' } } });
      assert.ok((await call(r.origin, key, 'POST', '/chat/completions', chat)).status >= 500);
      await r.gateway.alerts.idle();
    }
    await new Promise((done) => setTimeout(done, 350));
    for (const r of [a, b]) {
      upstream.enqueue(completion(1, 1));
      assert.equal((await call(r.origin, key, 'POST', '/chat/completions', chat)).status, 200);
      await new Promise((done) => setTimeout(done, 150));
      await r.gateway.alerts.idle();
    }
    await until('both alerts', () => receiver.received.length === 2);
    await new Promise((done) => setTimeout(done, 300));
    assert.deepEqual(receiver.received.map((r) => [r.body.type, r.body.data.endpoint]), [['breaker.opened', 'up/upstream-model'], ['breaker.closed', 'up/upstream-model']]);
    assert.deepEqual([a.gateway.alerts.stats.recorded + b.gateway.alerts.stats.recorded, a.gateway.alerts.stats.duplicates + b.gateway.alerts.stats.duplicates], [2, 2]);
  });
});
