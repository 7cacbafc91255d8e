/**
 * The catalog without a redeploy (issue 23 item 6): providers and models created, changed and
 * removed through `/v1/catalog`, validated with the config file as a file is, secrets sealed at
 * rest and never shown, the file's entries read-only, and a change in force on every gateway of
 * one database within a second (by the revision check alone, and through Redis).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../src/config/load.js';
import { buildGateway, type Gateway } from '../../src/server/app.js';
import type { OpenDatabase } from '../../src/store/database.js';
import { createKey } from '../../src/store/keys.js';
import { migrate } from '../../src/store/migrations.js';
import { randomId } from '../../src/util/ids.js';
import { SecretBox } from '../../src/util/secret-box.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig } from '../helpers/gateway.js';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.js';
import { redisReachable, TEST_REDIS_URL } from '../helpers/redis.js';
import { gatewayLogStream } from '../helpers/test-output.js';
import { until } from '../helpers/poll.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const noRedis = (await redisReachable()) ? false : `Redis is not reachable at ${TEST_REDIS_URL} (set OP_TEST_REDIS_URL)`;
const ADMIN = 'admin-test-key';
const SECRET_KEY = randomBytes(32).toString('base64');

const completion = (text: string) => ({
  json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } },
});

const call = async (origin: string, key: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${origin}/v1${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Json };
};
const chat = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }] });

interface Replica {
  gateway: Gateway;
  store: OpenDatabase;
  origin: string;
  logs: string[];
}

/** A gateway on `database` (its own connection), with the catalog API's secret key and options. */
async function startReplica(database: TestDatabase, upstreamUrl: string, options: { box?: SecretBox; redisPrefix?: string; pollMs?: number } = {}): Promise<Replica> {
  const store = database.open();
  await migrate(store.db);
  const logs: string[] = [];
  const sink = gatewayLogStream();
  const stream = { write: (line: string) => (logs.push(line), sink.write(line)) };
  const gateway = buildGateway({
    loaded: { config: parseConfig(oneModelConfig(upstreamUrl), 'test config'), source: 'test' },
    db: store.db,
    adminKey: ADMIN,
    logger: { level: 'info', stream },
    purgeIntervalMs: 0,
    secretBox: options.box,
    catalogPollMs: options.pollMs,
    redisUrl: options.redisPrefix ? TEST_REDIS_URL : undefined,
    redisPrefix: options.redisPrefix,
  });
  await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  return { gateway, store, logs, origin: `http://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}` };
}

const closeReplica = async (r: Replica | undefined) => {
  await r?.gateway.close();
  await r?.store.close();
};

describe('the catalog API on one gateway', () => {
  let upstream: Upstream;
  let second: Upstream;
  let database: TestDatabase;
  let gw: Replica;
  const admin = (m: string, p: string, b?: unknown) => call(gw.origin, ADMIN, m, p, b);
  const provider = (url: string) => ({ kind: 'openai', base_url: url, api_key: 'sk-stored-secret', headers: { 'x-team': 'blue' } });
  const model = (extra: Json = {}) => ({ name: 'Stored model', context_length: 4096, endpoints: [{ provider: 'extra', upstream_model: 'm2', pricing: { prompt: 1, completion: 2 } }], ...extra });

  before(async () => {
    upstream = await startUpstream();
    second = await startUpstream();
    database = await createTestDatabase();
    gw = await startReplica(database, upstream.url, { box: new SecretBox(SECRET_KEY) });
  });
  after(async () => {
    await closeReplica(gw);
    await database?.drop();
    await upstream?.close();
    await second?.close();
  });

  test('the file\'s entries are listed as read-only, with their secrets redacted', async () => {
    const list = await admin('GET', '/catalog');
    assert.equal(list.status, 200);
    assert.equal(list.body.revision, 0);
    assert.deepEqual(list.body.providers.map((p: Json) => [p.id, p.source, p.entry.api_key]), [['up', 'file', '[redacted]']]);
    assert.deepEqual(list.body.models.map((m: Json) => [m.id, m.source]), [['test/model', 'file']]);
    const put = await admin('PUT', '/catalog/providers/up', provider(second.url));
    assert.deepEqual([put.status, put.body.error.code, put.body.error.param], [409, 'catalog_entry_read_only', 'id']);
    const key = await createKey(gw.store.db, 'plain');
    const refused = await call(gw.origin, key.secret, 'GET', '/catalog');
    assert.deepEqual([refused.status, refused.body.error.code], [403, 'admin_key_required']);
  });

  test('a provider and a model put through the API serve at once; the secret is sealed at rest, never shown, and kept when a change leaves it out', async () => {
    const p = await admin('PUT', '/catalog/providers/extra', provider(second.url));
    assert.equal(p.status, 200, JSON.stringify(p.body));
    assert.deepEqual([p.body.revision, p.body.data.source, p.body.data.entry.api_key, p.body.data.entry.headers], [1, 'database', '[redacted]', { 'x-team': '[redacted]' }]);
    const m = await admin('PUT', '/catalog/models/team/stored', model());
    assert.equal(m.status, 200, JSON.stringify(m.body));
    assert.equal(m.body.revision, 2);
    second.enqueue(completion('from the stored provider'));
    const r = await call(gw.origin, ADMIN, 'POST', '/chat/completions', chat('team/stored'));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.choices[0].message.content, 'from the stored provider');
    const seen = second.requests.at(-1)!;
    assert.equal(seen.headers.authorization, 'Bearer sk-stored-secret');
    assert.equal(seen.headers['x-team'], 'blue');
    assert.equal((seen.json as Json).model, 'm2');
    // At rest: sealed, not the value.
    const rows = await gw.store.db.selectFrom('catalog_entries').selectAll().where('id', '=', 'extra').execute();
    assert.equal(rows.length, 1);
    assert.ok(!rows[0]!.entry.includes('sk-stored-secret') && !rows[0]!.entry.includes('blue'), rows[0]!.entry);
    assert.match(JSON.parse(rows[0]!.entry).api_key, /^opsec1:[0-9a-f]{8}\./);
    // A change without the secrets keeps them (a new base URL is the change); so does the entry
    // sent back as GET showed it, `[redacted]` included.
    const shown = (await admin('GET', '/catalog')).body.providers.find((x: Json) => x.id === 'extra').entry;
    assert.equal((await admin('PUT', '/catalog/providers/extra', shown)).status, 200);
    const changed = await admin('PUT', '/catalog/providers/extra', { kind: 'openai', base_url: `${second.url}/` });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    second.enqueue(completion('again'));
    assert.equal((await call(gw.origin, ADMIN, 'POST', '/chat/completions', chat('team/stored'))).status, 200);
    assert.equal(second.requests.at(-1)!.headers.authorization, 'Bearer sk-stored-secret');
    const models = await call(gw.origin, ADMIN, 'GET', '/models');
    assert.ok(models.body.data.some((x: Json) => x.id === 'team/stored'));
    const list = await admin('GET', '/catalog');
    assert.deepEqual(list.body.models.map((x: Json) => [x.id, x.source, x.updated_by]), [['test/model', 'file', undefined], ['team/stored', 'database', 'admin']]);
    assert.ok(!JSON.stringify(list.body).includes('sk-stored-secret'));
    // Each change is an audit row, its secrets left out (issue 23 item 4).
    const audit = await admin('GET', '/audit?target=catalog_provider:extra');
    assert.equal(audit.status, 200, JSON.stringify(audit.body));
    assert.deepEqual(audit.body.data.map((r: Json) => [r.action, r.actor.type, r.actor.id]), [['catalog_provider.update', 'admin_key', 'admin'], ['catalog_provider.update', 'admin_key', 'admin'], ['catalog_provider.create', 'admin_key', 'admin']]);
    assert.equal(audit.body.data[0].after.base_url, `${second.url}/`);
    // Which secrets changed is said (never their values): none after the echo, both at creation.
    assert.deepEqual([audit.body.data[0].after.secrets_changed, audit.body.data[1].after.secrets_changed, audit.body.data[2].after.secrets_changed], [undefined, undefined, ['api_key', 'headers.x-team']]);
    assert.equal(audit.body.data[2].before, null);
    // The action prefix filter takes names with `_`.
    assert.equal((await admin('GET', '/audit?action=catalog_provider.')).body.data.length, 3);
    assert.ok(!JSON.stringify(audit.body).includes('sk-stored-secret') && !JSON.stringify(audit.body).includes('opsec1:'), JSON.stringify(audit.body));
  });

  test('an entry that does not validate is refused with every issue, said from the entry; nothing is stored', async () => {
    const before = (await admin('GET', '/catalog')).body.revision;
    const bad = await admin('PUT', '/catalog/models/team%2Fbad', { context_length: -1, endpoints: [{ provider: 'nowhere', upstream_model: 'x' }] });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'invalid_catalog_entry');
    const issues: string[] = bad.body.error.metadata.issues;
    assert.ok(issues.some((i) => i.startsWith('context_length: ')), issues.join('\n'));
    assert.ok(issues.some((i) => i.startsWith('endpoints[0].provider: ')), issues.join('\n'));
    const pricey = await admin('PUT', '/catalog/models/team/pricey', { context_length: 4096, endpoints: [{ provider: 'up', upstream_model: 'x', pricing: { prompt: 1e21 } }] });
    assert.deepEqual([pricey.status, pricey.body.error.param], [400, 'endpoints[0].pricing.prompt']);
    const unknownField = await admin('PUT', '/catalog/providers/odd', { kind: 'openai', base_url: second.url, colour: 'red' });
    assert.deepEqual([unknownField.status, unknownField.body.error.code, unknownField.body.error.metadata.issues], [400, 'invalid_catalog_entry', ['colour: unknown key']]);
    assert.equal((await admin('GET', '/catalog')).body.revision, before);
  });

  test('what could read the host\'s environment or files, or start a process, is refused from the API', async () => {
    const env = await admin('PUT', '/catalog/providers/leak', { kind: 'openai', base_url: second.url, api_key: '${OP_ADMIN_KEY}' });
    assert.deepEqual([env.status, env.body.error.code, env.body.error.param], [400, 'invalid_catalog_entry', 'api_key']);
    const local = await admin('PUT', '/catalog/providers/engine', { kind: 'local' });
    assert.deepEqual([local.status, local.body.error.param], [400, 'kind']);
    const file = await admin('PUT', '/catalog/providers/vx', { kind: 'vertex', vertex: { project: 'p', location: 'us-central1', key_file: '/etc/passwd' } });
    assert.deepEqual([file.status, file.body.error.param], [400, 'vertex.key_file']);
    // A preset's key would be `${OPENAI_API_KEY}` (read from the environment in the file only): the API needs the key.
    const preset = await admin('PUT', '/catalog/providers/pre', { preset: 'openai' });
    assert.deepEqual([preset.status, preset.body.error.param], [400, 'api_key']);
    // A flood of headers is refused, and a body past 256 KB is a 413 before it is parsed.
    const headers = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`x-h${i}`, 'v']));
    assert.deepEqual((await admin('PUT', '/catalog/providers/many', { kind: 'openai', base_url: second.url, headers })).body.error.param, 'headers');
    const huge = await admin('PUT', '/catalog/providers/huge', { kind: 'openai', base_url: second.url, description: 'x'.repeat(300_000) });
    assert.equal(huge.status, 413);
  });

  test('removing a provider a stored model uses is refused naming the model; removing both works and the model is gone', async () => {
    const used = await admin('DELETE', '/catalog/providers/extra');
    assert.equal(used.status, 400);
    assert.equal(used.body.error.code, 'invalid_catalog_entry');
    assert.match(used.body.error.metadata.issues[0], /^models\["team\/stored"\]\.endpoints\[0\]\.provider: /);
    assert.equal((await admin('DELETE', '/catalog/models/team/stored')).status, 200);
    assert.equal((await admin('DELETE', '/catalog/providers/extra')).status, 200);
    const missing = await admin('DELETE', '/catalog/providers/extra');
    assert.deepEqual([missing.status, missing.body.error.code], [404, 'not_found']);
    const gone = await call(gw.origin, ADMIN, 'POST', '/chat/completions', chat('team/stored'));
    assert.equal(gone.status, 404);
    assert.equal((await admin('GET', '/catalog')).body.providers.length, 1);
  });
});

describe('the catalog API without OP_CATALOG_SECRET_KEY', () => {
  let upstream: Upstream;
  let database: TestDatabase;
  let gw: Replica;
  before(async () => {
    upstream = await startUpstream();
    database = await createTestDatabase();
    gw = await startReplica(database, upstream.url);
  });
  after(async () => {
    await closeReplica(gw);
    await database?.drop();
    await upstream?.close();
  });

  test('a provider with a secret is refused saying what to set; one without secrets is stored', async () => {
    const refused = await call(gw.origin, ADMIN, 'PUT', '/catalog/providers/keyed', { kind: 'openai', base_url: upstream.url, api_key: 'sk-x' });
    assert.deepEqual([refused.status, refused.body.error.code, refused.body.error.param], [400, 'catalog_secret_key_missing', 'api_key']);
    assert.match(refused.body.error.message, /OP_CATALOG_SECRET_KEY/);
    const open = await call(gw.origin, ADMIN, 'PUT', '/catalog/providers/open', { kind: 'openai', base_url: upstream.url });
    assert.equal(open.status, 200, JSON.stringify(open.body));
  });
});

describe('the catalog across gateways on one database', () => {
  let upstream: Upstream;
  let second: Upstream;
  let database: TestDatabase;
  const replicas: Replica[] = [];
  before(async () => {
    upstream = await startUpstream();
    second = await startUpstream();
    second.setDefault(completion('stored'));
    database = await createTestDatabase();
    const box = new SecretBox(SECRET_KEY);
    replicas.push(await startReplica(database, upstream.url, { box }), await startReplica(database, upstream.url, { box }));
  });
  after(async () => {
    for (const r of replicas) await closeReplica(r);
    await database?.drop();
    await upstream?.close();
    await second?.close();
  });

  test('a model put through one is served by the other within a second (the revision check every 500 ms, no Redis), and by a gateway started later', async () => {
    const [a, b] = replicas as [Replica, Replica];
    assert.equal((await call(a.origin, ADMIN, 'PUT', '/catalog/providers/extra', { kind: 'openai', base_url: second.url, api_key: 'sk-fleet' })).status, 200);
    const put = await call(a.origin, ADMIN, 'PUT', '/catalog/models/team/fleet', { context_length: 4096, endpoints: [{ provider: 'extra', upstream_model: 'm2' }] });
    assert.equal(put.status, 200);
    const ms = await until('the other gateway serves team/fleet', async () => (await call(b.origin, ADMIN, 'POST', '/chat/completions', chat('team/fleet'))).status === 200, 3_000, 50);
    process.stdout.write(`# catalog: a change on one gateway served by the other after ${ms} ms (500 ms revision check)\n`);
    assert.ok(ms <= 1_500, `${ms} ms`);
    assert.equal(second.requests.at(-1)!.headers.authorization, 'Bearer sk-fleet');
    const late = await startReplica(database, upstream.url, { box: new SecretBox(SECRET_KEY) });
    replicas.push(late);
    const first = await call(late.origin, ADMIN, 'POST', '/chat/completions', chat('team/fleet'));
    assert.equal(first.status, 200);
  });

  test('a gateway with another secret key cannot open the stored secrets: it keeps serving its previous catalog and says why', async () => {
    const other = await startReplica(database, upstream.url, { box: new SecretBox(randomBytes(32).toString('hex')) });
    replicas.push(other);
    assert.ok(other.logs.some((l) => l.includes('do not validate') && l.includes('sealed under another OP_CATALOG_SECRET_KEY')), other.logs.join(''));
    const r = await call(other.origin, ADMIN, 'POST', '/chat/completions', chat('team/fleet'));
    assert.equal(r.status, 404);
    // The file's model still serves there.
    upstream.enqueue(completion('file model'));
    const file = await call(other.origin, ADMIN, 'POST', '/chat/completions', chat('test/model'));
    assert.deepEqual([file.status, file.body.choices?.[0]?.message.content], [200, 'file model']);
  });
});

describe('the catalog across gateways sharing Redis', { skip: noRedis }, () => {
  let upstream: Upstream;
  let database: TestDatabase;
  const replicas: Replica[] = [];
  before(async () => {
    upstream = await startUpstream();
    upstream.setDefault(completion('ok'));
    database = await createTestDatabase();
    const prefix = `op-test:${randomId(12)}:`;
    // No revision check: the change must come through Redis.
    for (let i = 0; i < 2; i++) replicas.push(await startReplica(database, upstream.url, { redisPrefix: prefix, pollMs: 0 }));
  });
  after(async () => {
    for (const r of replicas) await closeReplica(r);
    await database?.drop();
    await upstream?.close();
  });

  test('a model put through one is in force on the other through the change notice', async () => {
    const [a, b] = replicas as [Replica, Replica];
    const put = await call(a.origin, ADMIN, 'PUT', '/catalog/models/team/notice', { context_length: 4096, endpoints: [{ provider: 'up', upstream_model: 'n' }] });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const ms = await until('the other gateway serves team/notice', async () => (await call(b.origin, ADMIN, 'POST', '/chat/completions', chat('team/notice'))).status === 200, 3_000, 10);
    process.stdout.write(`# catalog: a change on one gateway served by the other after ${ms} ms (Redis notice)\n`);
    assert.ok(ms <= 1_000, `${ms} ms`);
    assert.equal((await call(a.origin, ADMIN, 'DELETE', '/catalog/models/team/notice')).status, 200);
    await until('the other gateway forgets team/notice', async () => (await call(b.origin, ADMIN, 'POST', '/chat/completions', chat('team/notice'))).status === 404, 1_000, 10);
  });
});

describe('the secret box of stored secrets', () => {
  test('seals with a fresh IV, opens what it sealed, and refuses another key, an altered value and a malformed key', () => {
    const box = new SecretBox(randomBytes(32).toString('hex'));
    const a = box.seal('sk-one');
    assert.notEqual(a, box.seal('sk-one'));
    assert.equal(box.open(a), 'sk-one');
    const parts = a.split('.');
    parts[3] = Buffer.from('sk-two').toString('base64url');
    assert.throws(() => box.open(parts.join('.')), /altered/);
    assert.throws(() => new SecretBox(SECRET_KEY).open(a), /sealed under another OP_CATALOG_SECRET_KEY \(key id [0-9a-f]{8}/);
    assert.throws(() => new SecretBox('too-short'), /OP_CATALOG_SECRET_KEY must be 32 bytes/);
  });
});
