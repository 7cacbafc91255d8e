/**
 * Proof under faults (`npm run test:cluster`): three gateway replicas (the built CLI) on one
 * PostgreSQL schema and one private Redis, behind Debian's nginx on loopback, behave as one
 * gateway: rate and credit limits exact whichever replica serves, a SIGKILLed replica costs
 * only the requests in flight on it and every 200 keeps exactly one record, usage totals equal
 * the records; background jobs, endpoint health and key changes are fleet-wide.
 *
 * The replicas run with `records.durability: strict` (docs/records.md): a record is committed
 * before the last byte of its response, so "every 200 has its record" is exact, not within a
 * flush window. Counts are printed as `# cluster: …` lines so they can be quoted.
 *
 * Needs: dist/ (npm run build), PostgreSQL at OP_TEST_DATABASE_URL (a fresh schema is used and
 * dropped), redis-server and nginx executables (.ci/run installs them); skips saying which is
 * missing otherwise.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { createTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../helpers/test-database.js';
import { CLI, findExecutable, startNginx, startRedis, startReplica, type Proc } from './fleet.js';
import { privatePostgresMissing, startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.js';
import { sleep } from '../helpers/poll.js';

const missing = [
  !existsSync(CLI) && 'dist/src/cli.js (run npm run build)',
  !TEST_DATABASE_URL && 'OP_TEST_DATABASE_URL (a PostgreSQL server)',
  !findExecutable('redis-server') && 'redis-server',
  !findExecutable('nginx') && 'nginx',
].filter(Boolean);
const skip = missing.length ? `missing: ${missing.join(', ')}` : false;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ADMIN = 'cluster-admin-key';
const say = (line: string) => process.stdout.write(`# cluster: ${line}\n`);

const completion = (completionTokens: number) => ({
  json: { id: 'u', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: completionTokens, total_tokens: 5 + completionTokens } },
});

interface Answer {
  status: number;
  id: string | null;
  upstream: string | null;
  at: number;
  error?: string;
  /** Connection errors retried (see {@link chatAsSdk}). */
  retried?: number;
}

/** One chat completion; a connection error is status 0. */
async function chat(base: string, key: string, model: string, extra: object = {}): Promise<Answer> {
  try {
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }),
      signal: AbortSignal.timeout(120_000),
    });
    await res.arrayBuffer();
    return { status: res.status, id: res.headers.get('x-op-generation-id'), upstream: res.headers.get('x-op-upstream'), at: Date.now() };
  } catch (err) {
    return { status: 0, id: null, upstream: null, at: Date.now(), error: (err as Error).message };
  }
}

/**
 * {@link chat} retrying a connection error (no HTTP response at all) up to twice, as the
 * official SDKs do by default: a load balancer that reloads closes idle kept-alive client
 * connections, and a request sent as one closes never reached a replica.
 */
async function chatAsSdk(base: string, key: string, model: string): Promise<Answer> {
  for (let retried = 0; ; retried++) {
    const a = await chat(base, key, model);
    if (a.status !== 0 || retried === 2) return { ...a, retried };
  }
}

async function admin(base: string, method: string, path: string, body?: object): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, json: (await res.json()) as Json };
}

/** Exact USD decimal string → picodollars. */
function pico(usd: string): bigint {
  const [int, frac = ''] = usd.split('.');
  return BigInt(int!) * 10n ** 12n + BigInt(frac.padEnd(12, '0').slice(0, 12));
}

/** Count per replica address, for the printed lines. */
function spread(answers: Answer[]): string {
  const by = new Map<string, number>();
  for (const a of answers) by.set(a.upstream ?? '?', (by.get(a.upstream ?? '?') ?? 0) + 1);
  return [...by].map(([u, n]) => `${u.replace('127.0.0.1:', ':')}=${n}`).join(' ');
}

describe('a fleet of three replicas behind nginx', { skip }, () => {
  let dir: string;
  let database: TestDatabase;
  let sql: pg.Client;
  let redis: Proc;
  let fast: Upstream;
  let credit: Upstream;
  let flaky: Upstream;
  let replicas: (Proc & { name: string; url: string })[] = [];
  let lb: Awaited<ReturnType<typeof startNginx>>;
  let env: Record<string, string>;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'op-cluster-'));
    database = await createTestDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    redis = await startRedis(dir);
    fast = await startUpstream();
    fast.setDefault(completion(1));
    // Each answer costs exactly its worst case (1,000 output tokens at USD 1,000 per 1M).
    credit = await startUpstream();
    credit.setDefault({ ...completion(1000), delayBeforeHeadersMs: 500 });
    flaky = await startUpstream();
    flaky.setDefault(completion(1));
    const config = join(dir, 'opinference.yaml');
    writeFileSync(config, `records: { durability: strict }
routing:
  circuit_breaker: { failure_threshold: 3, open_ms: 60000 }
providers:
  - { id: up, kind: openai, base_url: "${fast.url}" }
  - { id: metered, kind: openai, base_url: "${credit.url}" }
  - { id: flaky, kind: openai, base_url: "${flaky.url}" }
models:
  - id: test/model
    context_length: 8192
    endpoints:
      - { provider: up, upstream_model: m, pricing: { prompt: 1, completion: 2 } }
  - id: test/credit
    context_length: 8192
    endpoints:
      - { provider: metered, upstream_model: m, max_completion_tokens: 1000, pricing: { prompt: 0, completion: 1000 } }
  - id: test/breaker
    context_length: 8192
    endpoints:
      - { provider: flaky, upstream_model: m, pricing: { prompt: 1, completion: 1 } }
      - { provider: up, upstream_model: m, pricing: { prompt: 1, completion: 1 } }
`);
    env = { OP_CONFIG: config, OP_DATABASE_URL: database.url, OP_REDIS_URL: (redis as Proc & { url: string }).url, OP_ADMIN_KEY: ADMIN };
    // Started together: migrations at start run under a lock.
    replicas = await Promise.all(['a', 'b', 'c'].map((name) => startReplica(name, env)));
    lb = await startNginx(dir, replicas.map((r) => r.port));
    say(`${lb.version}; replicas on ports ${replicas.map((r) => r.port).join(', ')}; PostgreSQL schema of ${new URL(TEST_DATABASE_URL!).host}; private redis-server on ${redis.port}`);
  });

  after(async () => {
    await lb?.stop();
    await Promise.all(replicas.map((r) => r.stop()));
    await redis?.stop();
    await Promise.all([fast, credit, flaky].map((u) => u?.close()));
    await sql?.end();
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function createKey(body: object): Promise<{ id: string; secret: string }> {
    const res = await admin(lb.url, 'POST', '/v1/keys', { name: 'cluster', ...body });
    assert.equal(res.status, 201, JSON.stringify(res.json));
    return { id: res.json.data.id, secret: res.json.key };
  }

  test('60 parallel requests, 10 requests per minute: exactly 10 succeed across the replicas', async () => {
    const key = await createKey({ rate_limit: { requests_per_minute: 10 } });
    // Fixed UTC minute windows: keep the burst inside one.
    const second = new Date().getUTCSeconds();
    if (second > 40) await sleep((61 - second) * 1000);
    const answers = await Promise.all(Array.from({ length: 60 }, () => chat(lb.url, key.secret, 'test/model')));
    const ok = answers.filter((a) => a.status === 200);
    const limited = answers.filter((a) => a.status === 429);
    say(`rate limit 10/min, 60 parallel: ${ok.length} succeeded (${spread(ok)}), ${limited.length} got 429 (${spread(limited)})`);
    assert.equal(ok.length, 10);
    assert.equal(limited.length, 50);
  });

  test('60 parallel requests, credit for 3 worst cases: exactly 3 succeed across the replicas', async () => {
    // Worst case per request: 1,000 output tokens at USD 1,000 per 1M = USD 1; room for 3.
    const key = await createKey({ limit: 3.5 });
    const answers = await Promise.all(Array.from({ length: 60 }, () => chat(lb.url, key.secret, 'test/credit', { max_tokens: 1000 })));
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 402 || a.status === 403 || a.status === 429);
    say(`credit for 3 worst cases, 60 parallel: ${ok.length} succeeded (${spread(ok)}), ${refused.length} refused (${[...new Set(refused.map((a) => a.status))].join(', ')})`);
    assert.equal(ok.length, 3);
    assert.equal(refused.length, 57);
    const remaining = await admin(lb.url, 'GET', `/v1/keys/${key.id}`);
    assert.equal(remaining.json.data.limit_remaining, '0.5');
  });

  test('a team budget spent through two keys on every replica: 60 parallel requests, room for 3 worst cases, exactly 3 succeed', async () => {
    // Issue 23: the team's credit pre-authorisation holds over the sum of its keys, fleet-wide.
    const team = await admin(lb.url, 'POST', '/v1/teams', { name: 'cluster-team', limit: '3.5' });
    assert.equal(team.status, 201, JSON.stringify(team.json));
    const keys = [await createKey({ team: team.json.data.id }), await createKey({ team: team.json.data.id })];
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => chat(lb.url, keys[i % 2]!.secret, 'test/credit', { max_tokens: 1000 })));
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 402);
    say(`team budget for 3 worst cases through 2 keys, 60 parallel: ${ok.length} succeeded (${spread(ok)}), ${refused.length} refused with 402`);
    assert.equal(ok.length, 3);
    assert.equal(refused.length, 57);
    // Each replica answers for the same team from the shared records.
    for (const r of replicas) {
      const got = await admin(r.url, 'GET', `/v1/teams/${team.json.data.id}`);
      assert.equal(got.json.data.usage, '3');
      assert.equal(got.json.data.limit_remaining, '0.5');
    }
  });

  test('a model put through the catalog API on one replica is served by every replica within 1 s', async () => {
    // Issue 23 item 6: the catalog without a redeploy, fleet-wide (Redis notice; revision check behind it).
    const put = await admin(replicas[0]!.url, 'PUT', '/v1/catalog/models/team/cluster', { context_length: 4096, endpoints: [{ provider: 'up', upstream_model: 'm', pricing: { prompt: 1, completion: 2 } }] });
    assert.equal(put.status, 200, JSON.stringify(put.json));
    const started = Date.now();
    const seen = await Promise.all(
      replicas.map(async (r) => {
        for (;;) {
          if ((await chat(r.url, ADMIN, 'team/cluster')).status === 200) return Date.now() - started;
          if (Date.now() - started > 5_000) return Infinity;
          await sleep(10);
        }
      }),
    );
    say(`catalog change on ${replicas[0]!.name}: served by the replicas after ${seen.map((ms) => `${ms} ms`).join(', ')}`);
    for (const ms of seen) assert.ok(ms <= 1_000, `${ms} ms`);
    const removed = await admin(lb.url, 'DELETE', '/v1/catalog/models/team/cluster');
    assert.equal(removed.status, 200);
  });

  test('the retention purge ran once across the fleet, not once per replica', () => {
    const runs = replicas.map((r) => r.logs().split('\n').filter((l) => l.includes('"msg":"retention purge"')).length);
    say(`retention purge runs per replica: ${runs.join(', ')} (fleet total ${runs.reduce((a, b) => a + b, 0)})`);
    assert.equal(runs.reduce((a, b) => a + b, 0), 1);
  });

  /** Poll `check` every 50 ms for up to `ms`; the seconds it took, or null. */
  async function secondsUntil(check: () => Promise<boolean>, ms: number): Promise<number | null> {
    const t0 = Date.now();
    while (Date.now() - t0 < ms) {
      if (await check()) return (Date.now() - t0) / 1000;
      await sleep(50);
    }
    return null;
  }

  test('an upstream that fails is skipped by every replica within 1 s of the breaker opening on one', async () => {
    const [a, b, c] = replicas as [typeof replicas[0], typeof replicas[0], typeof replicas[0]];
    const circuit = async (r: { url: string }) => {
      const res = await admin(r.url, 'GET', '/v1/models/test/breaker/endpoints');
      return (res.json.data.endpoints as { provider_name: string; circuit: string }[]).find((e) => e.provider_name === 'flaky')?.circuit;
    };
    flaky.setDefault({ status: 500, json: { error: { message: 'down' } } });
    const order = { provider: { order: ['flaky', 'up'] } };
    for (let i = 0; i < 3; i++) assert.equal((await chat(a.url, ADMIN, 'test/breaker', order)).status, 200);
    assert.equal(await circuit(a), 'open');
    const seconds = await secondsUntil(async () => (await circuit(b)) === 'open' && (await circuit(c)) === 'open', 5_000);
    say(`breaker opened on one replica: open on the two others after ${seconds === null ? 'more than 5' : seconds.toFixed(2)} s`);
    const before = flaky.requests.length;
    for (const r of [b, c]) assert.equal((await chat(r.url, ADMIN, 'test/breaker', order)).status, 200);
    assert.equal(flaky.requests.length, before, 'the other replicas skipped the failing upstream');
    assert.ok(seconds !== null && seconds <= 1, `${seconds} s`);
  });

  test('a key disabled through one replica is refused by the others within 1 s', async () => {
    const [a, b, c] = replicas as [typeof replicas[0], typeof replicas[0], typeof replicas[0]];
    const key = await createKey({});
    // Every replica has the key cached.
    for (const r of [a, b, c]) assert.equal((await chat(r.url, key.secret, 'test/model')).status, 200);
    assert.equal((await admin(a.url, 'PATCH', `/v1/keys/${key.id}`, { disabled: true })).status, 200);
    const refused = (r: { url: string }) => fetch(`${r.url}/v1/key`, { headers: { authorization: `Bearer ${key.secret}` } }).then((res) => res.status === 401 || res.status === 403);
    const seconds = await secondsUntil(async () => (await refused(b)) && (await refused(c)), 10_000);
    say(`key disabled on one replica: refused by the two others after ${seconds === null ? 'more than 10' : seconds.toFixed(2)} s`);
    assert.ok(seconds !== null && seconds <= 1, `${seconds} s`);
  });
  test('rolling restart: a replica taken out of nginx, drained by SIGTERM and restarted while traffic flows: no request fails', async () => {
    const key = await createKey({});
    const total = 800;
    const old = replicas[1]!;
    const answers: Answer[] = [];
    let next = 0;
    let restarted: Promise<void> | undefined;
    const restart = async () => {
      await lb.reload([old.port]); // 1. out of the load balancer (in-flight requests finish)
      old.child.kill('SIGTERM'); // 2. drain and exit
      assert.equal(await old.exited, 0, old.logs());
      replicas[1] = await startReplica('b2', env, old.port); // 3. the new one, ready
      await lb.reload([]); // 4. back in
    };
    const worker = async () => {
      while (next < total) {
        next++;
        answers.push(await chatAsSdk(lb.url, key.secret, 'test/model'));
        if (!restarted && answers.length >= 200) restarted = restart();
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    await restarted;
    const ok = answers.filter((a) => a.status === 200);
    const failed = answers.filter((a) => a.status !== 200);
    const retried = answers.reduce((n, a) => n + (a.retried ?? 0), 0);
    say(`rolling restart: ${answers.length} requests, 8 at a time, :${old.port} restarted after 200: ${ok.length} answered 200 (${spread(ok)}), ${failed.length} failed (${failed.map((a) => `${a.status || a.error} via ${a.upstream}`).join('; ') || 'none'}), ${retried} connection errors to nginx retried by the client`);
    assert.deepEqual(failed, []);
    assert.equal((await fetch(`${replicas[1]!.url}/ready`)).status, 200);
    // Exactly one record per request: no retry ran a request twice.
    const found = await sql.query('select id from generations where id = any($1)', [ok.map((a) => a.id!)]);
    assert.equal(found.rowCount, total);
    const records = await sql.query<{ n: string }>('select count(*) as n from generations where key_id = $1', [key.id]);
    assert.equal(Number(records.rows[0]!.n), total);
    // The restarted replica serves again.
    const back = await Promise.all(Array.from({ length: 30 }, () => chat(lb.url, key.secret, 'test/model')));
    assert.ok(back.some((a) => a.upstream === `127.0.0.1:${old.port}` && a.status === 200), spread(back));
  });

  test('SIGKILL of one replica mid-run: only its in-flight requests fail, every 200 has exactly one record, usage equals the records', async () => {
    const key = await createKey({});
    const total = 2000;
    const concurrency = 16;
    const victim = replicas[2]!;
    const victimAddr = `127.0.0.1:${victim.port}`;
    const answers: Answer[] = [];
    let next = 0;
    let killedAt = 0;
    const started = Date.now();
    const worker = async () => {
      while (next < total) {
        next++;
        answers.push(await chat(lb.url, key.secret, 'test/model'));
        if (!killedAt && answers.length >= 600) {
          killedAt = Date.now();
          victim.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    await victim.exited;
    const ok = answers.filter((a) => a.status === 200);
    const failed = answers.filter((a) => a.status !== 200);
    const afterKill = ok.filter((a) => a.at > killedAt + 1000);
    say(`SIGKILL run: ${answers.length} requests, concurrency ${concurrency}, ${((Date.now() - started) / 1000).toFixed(1)} s; killed ${victimAddr} after 600 answers`);
    say(`SIGKILL run: ${ok.length} answered 200 (${spread(ok)}); ${failed.length} failed (${failed.map((a) => `${a.status || a.error} via ${a.upstream}`).join('; ') || 'none'}); ${afterKill.length} 200s more than 1 s after the kill (${spread(afterKill)})`);
    assert.equal(answers.length, total);
    // Only requests in flight on the killed replica fail: nginx's 502 naming it, at most one per client.
    assert.ok(failed.length <= concurrency, `${failed.length} failures`);
    for (const f of failed) assert.deepEqual([f.status, f.upstream], [502, victimAddr], JSON.stringify(f));
    // The survivors keep serving.
    assert.ok(afterKill.length > 0);
    assert.ok(afterKill.every((a) => a.upstream !== victimAddr));
    for (const r of replicas.slice(0, 2)) assert.equal((await fetch(`${r.url}/ready`)).status, 200);

    // Every 200 has exactly one record (strict durability: no flush window to allow for).
    const ids = ok.map((a) => a.id!);
    assert.equal(new Set(ids).size, ids.length, 'generation ids are unique');
    const found = await sql.query<{ id: string }>('select id from generations where id = any($1)', [ids]);
    const rows = await sql.query<{ n: string; p: string; c: string; cost: string }>(
      'select count(*) as n, sum(prompt_tokens) as p, sum(completion_tokens) as c, sum(cost_pico) as cost from generations where key_id = $1',
      [key.id],
    );
    const records = Number(rows.rows[0]!.n);
    say(`SIGKILL run: ${ok.length} 200s, ${found.rowCount} of them with a record; ${records} records for the key in all (${records - ok.length} of requests cut off by the kill)`);
    assert.equal(found.rowCount, ids.length);
    assert.ok(records >= ok.length && records <= ok.length + failed.length, `${records} records`);

    // Usage totals (the rollups, through any replica) equal the sum of the records.
    const usage = await admin(lb.url, 'GET', `/v1/usage?key_id=${key.id}&bucket=hour&from=${started - 3_600_000}&to=${Date.now() + 3_600_000}`);
    assert.equal(usage.status, 200, JSON.stringify(usage.json));
    const t = usage.json.totals;
    say(`usage totals: ${t.requests} requests, ${t.prompt_tokens} + ${t.completion_tokens} tokens, USD ${t.cost}; records: ${records}, ${rows.rows[0]!.p} + ${rows.rows[0]!.c} tokens, ${rows.rows[0]!.cost} picodollars`);
    assert.deepEqual([t.requests, t.prompt_tokens, t.completion_tokens, pico(t.cost)], [records, Number(rows.rows[0]!.p), Number(rows.rows[0]!.c), BigInt(rows.rows[0]!.cost)]);
  });
});

/**
 * PostgreSQL goes away and comes back under the fleet (issue 18 item 1): the fleet runs on a
 * private PostgreSQL server this block starts, stops and cuts the connections of (never the
 * one of OP_TEST_DATABASE_URL), two replicas `serve` and one `serve --workers 2`, behind nginx.
 * No process exits, every 200 keeps exactly one record, `/ready` says 503 while PostgreSQL is
 * down and 200 once it is back.
 */
describe('a fleet whose PostgreSQL goes away and comes back', { skip: skip || privatePostgresMissing }, () => {
  let dir: string;
  let server: PrivatePostgres;
  let redis: Proc;
  let fast: Upstream;
  let replicas: (Proc & { name: string; url: string })[] = [];
  let lb: Awaited<ReturnType<typeof startNginx>>;
  let key: { id: string; secret: string };

  /** One query on a connection of its own (the server is stopped under the test). */
  async function query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<T>> {
    const client = new pg.Client({ connectionString: server.url, application_name: 'cluster-test' });
    await client.connect();
    try {
      return await client.query<T>(text, values);
    } finally {
      await client.end();
    }
  }

  /** Processes that exited (a replica, or a worker of the `--workers 2` one restarted by its primary). */
  function exits(): string[] {
    const out: string[] = [];
    for (const r of replicas) {
      if (r.child.exitCode !== null || r.child.signalCode !== null) out.push(`${r.name} exited (${r.child.exitCode ?? r.child.signalCode})`);
      const restarted = r.logs().split('\n').filter((l) => l.includes('worker exited unexpectedly')).length;
      if (restarted) out.push(`${r.name}: ${restarted} workers exited`);
    }
    return out;
  }

  const readyAll = () => Promise.all(replicas.map((r) => fetch(`${r.url}/ready`, { signal: AbortSignal.timeout(10_000) }).then((res) => res.status, () => 0)));

  /** `total` chat requests through nginx, `concurrency` at a time; `during(answered)` is called after each answer. */
  async function load(total: number, concurrency: number, during: (answered: number) => void = () => {}): Promise<Answer[]> {
    const answers: Answer[] = [];
    let next = 0;
    const worker = async () => {
      while (next < total) {
        next++;
        answers.push(await chat(lb.url, key.secret, 'test/model'));
        during(answers.length);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return answers;
  }

  /** Wait until every 200 has its record (the replicas retry with backoff up to 5 s); how many have exactly one. */
  async function recorded(ok: Answer[]): Promise<{ one: number; missing: number; duplicated: number }> {
    const ids = ok.map((a) => a.id!);
    let counts = new Map<string, number>();
    const until = Date.now() + 30_000;
    while (Date.now() < until) {
      const rows = await query<{ id: string; n: string }>('select id, count(*) as n from generations where id = any($1) group by id', [ids]);
      counts = new Map(rows.rows.map((r) => [r.id, Number(r.n)]));
      if (counts.size === ids.length) break;
      await sleep(250);
    }
    const n = ids.map((id) => counts.get(id) ?? 0);
    return { one: n.filter((c) => c === 1).length, missing: n.filter((c) => c === 0).length, duplicated: n.filter((c) => c > 1).length };
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'op-cluster-pg-'));
    server = await startPrivatePostgres();
    redis = await startRedis(dir);
    fast = await startUpstream();
    fast.setDefault({ ...completion(1), delayBeforeHeadersMs: 20 });
    const config = join(dir, 'opinference.yaml');
    writeFileSync(config, `records: { durability: strict }
providers:
  - { id: up, kind: openai, base_url: "${fast.url}" }
models:
  - id: test/model
    context_length: 8192
    endpoints:
      - { provider: up, upstream_model: m, pricing: { prompt: 1, completion: 2 } }
`);
    const env = { OP_CONFIG: config, OP_DATABASE_URL: server.url, OP_REDIS_URL: (redis as Proc & { url: string }).url, OP_ADMIN_KEY: ADMIN };
    replicas = await Promise.all([
      startReplica('a', env),
      startReplica('b', env),
      startReplica('c (--workers 2)', env, undefined, ['--workers', '2']),
    ]);
    lb = await startNginx(dir, replicas.map((r) => r.port));
    const res = await admin(lb.url, 'POST', '/v1/keys', { name: 'outage' });
    assert.equal(res.status, 201, JSON.stringify(res.json));
    key = { id: res.json.data.id, secret: res.json.key };
    say(`outage fleet: replicas on ports ${replicas.map((r) => r.port).join(', ')} (the last with --workers 2); private PostgreSQL on ${server.port}`);
  });

  after(async () => {
    await lb?.stop();
    await Promise.all(replicas.map((r) => r.stop()));
    await redis?.stop();
    await fast?.close();
    server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('pg_terminate_backend of every gateway connection, idle then under load: every request answers 200 with exactly one record, no process exits', async () => {
    // Every replica (and worker) has connections, the purge's lease among them.
    assert.deepEqual((await load(60, 6)).map((a) => a.status), Array(60).fill(200));
    const idle = await server.terminate();
    const afterIdle = await load(200, 8);
    let underLoad = 0;
    const cuts: Promise<number>[] = [];
    const loaded = await load(800, 8, (n) => {
      if (n % 200 === 100) cuts.push(server.terminate());
    });
    underLoad = (await Promise.all(cuts)).reduce((a, b) => a + b, 0);
    const answers = [...afterIdle, ...loaded];
    const ok = answers.filter((a) => a.status === 200);
    const failed = answers.filter((a) => a.status !== 200);
    const records = await recorded(ok);
    say(`pg_terminate_backend: ${idle} connections cut while idle, ${underLoad} in ${cuts.length} cuts under load (800 requests, 8 at a time); ${ok.length} of ${answers.length} answered 200, ${failed.length} failed (${failed.map((a) => a.status || a.error).join(', ') || 'none'}); records: ${records.one} exactly one, ${records.missing} missing, ${records.duplicated} duplicated; processes exited: ${exits().join('; ') || 'none'}`);
    assert.ok(idle >= 3, `${idle} idle connections cut`);
    assert.deepEqual(failed, []);
    assert.deepEqual(records, { one: ok.length, missing: 0, duplicated: 0 });
    assert.deepEqual(exits(), []);
    assert.deepEqual(await readyAll(), [200, 200, 200]);
  });

  test('PostgreSQL stopped for 10 s under load, then started: no process exits, every 200 has exactly one record, /ready is 503 during and 200 after', async () => {
    let stoppedAt = 0;
    let startedAt = 0;
    let readyDuring: number[] = [];
    let secondsToReady = null as number | null;
    let outage: Promise<void> | undefined;
    const started = Date.now();
    const answers = await load(3000, 8, (n) => {
      if (n !== 300) return;
      outage = (async () => {
        server.stop();
        stoppedAt = Date.now();
        await sleep(2_000);
        readyDuring = await readyAll();
        await sleep(Math.max(0, 10_000 - (Date.now() - stoppedAt)));
        server.start();
        startedAt = Date.now();
        // Under the load still running: how long until every replica is ready again.
        while (Date.now() - startedAt < 30_000) {
          if ((await readyAll()).every((s) => s === 200)) {
            secondsToReady = (Date.now() - startedAt) / 1000;
            return;
          }
          await sleep(100);
        }
      })();
    });
    await outage;
    const ok = answers.filter((a) => a.status === 200);
    const failed = answers.filter((a) => a.status !== 200);
    const during = answers.filter((a) => a.at > stoppedAt && a.at < startedAt);
    const records = await recorded(ok);
    say(`PostgreSQL stopped for ${((startedAt - stoppedAt) / 1000).toFixed(1)} s under load (${answers.length} requests, 8 at a time, ${((Date.now() - started) / 1000).toFixed(1)} s): ${ok.length} answered 200 (${during.filter((a) => a.status === 200).length} while it was down; ${spread(ok)}), ${failed.length} failed (${[...new Set(failed.map((a) => a.status || a.error))].join(', ') || 'none'})`);
    say(`PostgreSQL stop: /ready during ${readyDuring.join(', ')}; all 200 again ${secondsToReady === null ? 'not within 30' : secondsToReady.toFixed(1)} s after the start; records: ${records.one} of ${ok.length} 200s with exactly one, ${records.missing} lost, ${records.duplicated} duplicated; processes exited: ${exits().join('; ') || 'none'}`);
    assert.deepEqual(readyDuring, [503, 503, 503]);
    assert.ok(secondsToReady !== null);
    assert.deepEqual(records, { one: ok.length, missing: 0, duplicated: 0 });
    assert.deepEqual(exits(), []);
    assert.ok(during.length > 0 && during.every((a) => a.status === 200), `while down: ${[...new Set(during.map((a) => a.status))].join(', ')}`);
    assert.deepEqual(failed, []);
  });
});
