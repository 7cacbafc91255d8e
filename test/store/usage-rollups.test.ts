/**
 * Daily rollups and session counts (migration 0004): random traffic across UTC day boundaries,
 * written through the real writer in random batches (several days per batch), then
 * - the daily rollups equal the hourly ones summed by day (sums, exact costs, histograms);
 * - the session counts equal the generations counted by day, key, session, model, provider, tag;
 * - every usage query shape equals a brute-force count of the generations (whole days from the
 *   daily tables, partial days from the hourly ones or the generations must add up exactly);
 * - the 0004 backfill, run on the same data, rebuilds exactly what the writer wrote;
 * - the 0006 backfill (refusals out of `errors` into `refused`) does too.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { picoToUsdString } from '../../src/accounting/cost.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import type { OpenDatabase } from '../../src/store/database.js';
import { GenerationWriter } from '../../src/store/generation-writer.js';
import { migrate } from '../../src/store/migrations.js';
import { LATENCY_BUCKETS_MS, type Database, type GenerationsTable } from '../../src/store/schema.js';
import { histogramPercentiles, queryUsage, TOP_SESSIONS, USAGE_GROUPS, USAGE_MAX_RANGE_DAYS, type UsageQuery, type UsageResult, type UsageStats } from '../../src/store/usage-queries.js';

/** The groups the brute-force reference models (team and user are covered in test/server/teams.test.ts). */
const MODELLED_GROUPS = USAGE_GROUPS.filter((g) => g !== 'team' && g !== 'user');
import { latencyBucket } from '../../src/store/usage-rollup.js';
import { seededRandom } from '../helpers/seeded-random.js';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Midnight UTC; traffic from B − 2 days to B + 3 days 12:00, nothing after. */
const B = Date.UTC(2025, 2, 10);
const LAST = B + 3 * DAY + 12 * HOUR;

const rand = seededRandom(20250310);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;

const KEYS = ['key_a', 'key_b', null] as const;
const MODELS = ['m1', 'm2', 'm3'] as const;
const PROVIDERS = ['p1', 'p2'] as const;
const TAGS = ['x', 'y', 'z'] as const;

function makeRow(n: number): GenerationsTable {
  const created = B - 2 * DAY + Math.floor(rand() * (LAST - (B - 2 * DAY)));
  const status = pick(['success', 'success', 'success', 'success', 'error', 'cancelled'] as const);
  const noProvider = status === 'error' && rand() < 0.5;
  const model = pick(MODELS);
  // A few hundred sessions of very different sizes (so the top-100 cut matters); some shared by two keys, many spanning days.
  const session = rand() < 0.25 ? null : `s${Math.floor(rand() ** 2 * 300)}`;
  const latency = rand() < 0.02 ? 150_000 : Math.floor(rand() ** 3 * 20_000);
  return {
    id: `gen_${String(n).padStart(6, '0')}`,
    request_id: `req_${n}`,
    created_at: created,
    key_id: pick(KEYS),
    requested_model: model,
    served_model: noProvider ? null : model,
    provider: noProvider ? null : pick(PROVIDERS),
    endpoint: null,
    upstream_model: null,
    status,
    // Without a provider: refusals (a 400 validation error, a key's rate limit) and upstream failures.
    error_code: status !== 'error' ? null : !noProvider ? 'upstream_error' : (['invalid_request', 'upstream_error', 'rate_limited'] as const)[n % 3]!,
    error_message: null,
    http_status: status !== 'error' ? 200 : !noProvider || n % 3 === 1 ? 502 : n % 3 === 0 ? 400 : 429,
    finish_reason: null,
    native_finish_reason: null,
    api: 'chat',
    streamed: 0,
    cancelled: status === 'cancelled' ? 1 : 0,
    prompt_tokens: noProvider ? null : Math.floor(rand() * 5000),
    completion_tokens: noProvider ? null : Math.floor(rand() * 2000),
    reasoning_tokens: rand() < 0.3 ? Math.floor(rand() * 500) : null,
    cached_tokens: rand() < 0.3 ? Math.floor(rand() * 1000) : null,
    cache_write_tokens: null,
    usage_source: null,
    // Now and then more picodollars than a double holds exactly (2^53 ≈ 9.007e15).
    cost_pico: rand() < 0.05 ? 9_007_199_254_740_993n + BigInt(n) : BigInt(Math.floor(rand() * 1e9)),
    latency_ms: latency,
    ttft_ms: rand() < 0.4 ? null : Math.floor(latency * rand()),
    tags: JSON.stringify(rand() < 0.3 ? [] : rand() < 0.8 ? [pick(TAGS)] : [pick(TAGS), pick(TAGS), pick(TAGS)]),
    session,
    retention: 'none',
    detail: '{}',
    content: null,
  };
}

// ---------------------------------------------------------------------------------------------
// Brute force: usage straight from the generation rows.

interface Sums {
  requests: number;
  errors: number;
  refused: number;
  cancelled: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  cached_tokens: number;
  cost: bigint;
  latency: number[];
  ttft: number[];
}
const emptySums = (): Sums => ({
  requests: 0, errors: 0, refused: 0, cancelled: 0, prompt_tokens: 0, completion_tokens: 0, reasoning_tokens: 0, cached_tokens: 0, cost: 0n,
  latency: new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0), ttft: new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0),
});
function add(s: Sums, g: GenerationsTable): void {
  s.requests++;
  // Refused for the client's own reason, no provider answering: not an error of a provider.
  if (g.status === 'error' && g.provider === null && (g.error_code === 'invalid_request' || g.error_code === 'rate_limited')) s.refused++;
  else if (g.status === 'error') s.errors++;
  if (g.status === 'cancelled') s.cancelled++;
  s.prompt_tokens += g.prompt_tokens ?? 0;
  s.completion_tokens += g.completion_tokens ?? 0;
  s.reasoning_tokens += g.reasoning_tokens ?? 0;
  s.cached_tokens += g.cached_tokens ?? 0;
  s.cost += BigInt(g.cost_pico);
  s.latency[latencyBucket(g.latency_ms)]!++;
  if (g.ttft_ms !== null) s.ttft[latencyBucket(g.ttft_ms)]!++;
}
const stats = (s: Sums): UsageStats => ({
  requests: s.requests, errors: s.errors, refused: s.refused, cancelled: s.cancelled, prompt_tokens: s.prompt_tokens, completion_tokens: s.completion_tokens,
  reasoning_tokens: s.reasoning_tokens, cached_tokens: s.cached_tokens, cost: picoToUsdString(s.cost), latency_ms: histogramPercentiles(s.latency), ttft_ms: histogramPercentiles(s.ttft),
});

function expected(rows: readonly GenerationsTable[], query: UsageQuery): UsageResult {
  const size = query.bucket === 'day' ? DAY : HOUR;
  const from = Math.floor(query.from / size) * size;
  const to = Math.ceil(query.to / HOUR) * HOUR;
  const tagsOf = (g: GenerationsTable) => [...new Set(JSON.parse(g.tags) as string[])];
  const match = rows.filter(
    (g) =>
      g.created_at >= from &&
      g.created_at < to &&
      (query.keyId === undefined || g.key_id === query.keyId) &&
      (query.model === undefined || (g.served_model ?? g.requested_model) === query.model) &&
      (query.provider === undefined || (g.provider ?? '') === query.provider) &&
      (query.tag === undefined || tagsOf(g).includes(query.tag)),
  );
  const totals = emptySums();
  for (const g of match) add(totals, g);
  let groupsOf: (g: GenerationsTable) => (string | null)[];
  switch (query.groupBy) {
    case 'team':
    case 'user':
      throw new Error(`the reference does not model group_by ${query.groupBy}`);
    case null:
      groupsOf = () => [null];
      break;
    case 'model':
      groupsOf = (g) => [g.served_model ?? g.requested_model];
      break;
    case 'provider':
      groupsOf = (g) => [g.provider];
      break;
    case 'key':
      groupsOf = (g) => [g.key_id];
      break;
    case 'tag':
      // With a tag filter, only that tag's group.
      groupsOf = (g) => tagsOf(g).filter((t) => query.tag === undefined || t === query.tag);
      break;
    case 'session': {
      const counts = new Map<string, number>();
      for (const g of match) if (g.session !== null) counts.set(g.session, (counts.get(g.session) ?? 0) + 1);
      const top = new Set(
        [...counts]
          .sort(([a, n], [b, m]) => m - n || (a < b ? -1 : 1))
          .slice(0, TOP_SESSIONS)
          .map(([s]) => s),
      );
      groupsOf = (g) => (g.session !== null && top.has(g.session) ? [g.session] : []);
      break;
    }
  }
  const groups = new Map<string, { bucket: number; group: string | null; sums: Sums }>();
  for (const g of match) {
    const bucket = Math.floor(g.created_at / size) * size;
    for (const group of groupsOf(g)) {
      const id = `${bucket}|${group}`;
      let e = groups.get(id);
      if (!e) groups.set(id, (e = { bucket, group, sums: emptySums() }));
      add(e.sums, g);
    }
  }
  const data = [...groups.values()].sort((a, b) => a.bucket - b.bucket || (a.group === b.group ? 0 : a.group === null ? -1 : b.group === null ? 1 : a.group < b.group ? -1 : 1));
  return {
    data: data.map((e) => ({ bucket: new Date(e.bucket).toISOString(), group: e.group, ...stats(e.sums) })),
    totals: stats(totals),
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    bucket: query.bucket,
    group_by: query.groupBy,
  };
}

// ---------------------------------------------------------------------------------------------

const ROLLUPS = ['usage_daily', 'usage_daily_tags', 'usage_daily_sessions', 'usage_daily_session_models', 'usage_daily_session_tags'] as const;

/** The rollup tables with sums (and `refused` since migration 0006). */
const SUM_ROLLUPS = ['usage_hourly', 'usage_hourly_tags', 'usage_daily', 'usage_daily_tags'] as const;

/** Put rollup tables back as a version before migration 0006 wrote them: refusals counted under `errors`, no `refused` column. */
async function undoRefusedColumn(db: OpenDatabase['db'], tables: readonly (typeof SUM_ROLLUPS)[number][]): Promise<void> {
  for (const t of tables) {
    await db
      .updateTable(t)
      .set({ errors: sql`errors + refused`, refused: 0 })
      .execute();
    await db.schema.alterTable(t).dropColumn('refused').execute();
  }
  await db.deleteFrom('migrations_applied').where('name', '=', '0006_refused_in_rollups').execute();
}

/** Every row of a table, costs as text, in a stable order. */
async function dump(db: OpenDatabase['db'], table: keyof Database): Promise<string[]> {
  const rows = await db.selectFrom(table).selectAll().execute();
  const hasCost = table.startsWith('usage_hourly') || table === 'usage_daily' || table === 'usage_daily_tags';
  const costs = hasCost ? await db.selectFrom(table as 'usage_daily').select(sql<string>`cast(cost_pico as text)`.as('c')).execute() : [];
  return rows.map((r, i) => JSON.stringify({ ...r, ...(hasCost ? { cost_pico: costs[i]!.c } : {}) })).sort();
}

describe('daily rollups and session counts', () => {
  let database: TestDatabase;
  let store: OpenDatabase;
  let rows: GenerationsTable[];

  before(async () => {
    database = await createTestDatabase('rollups.db');
    store = database.open();
    await migrate(store.db);
    rows = Array.from({ length: 3000 }, (_, n) => makeRow(n));
    // Random order and random batch sizes: a batch holds several days, and most rollup rows are
    // written by several batches (updates, not only inserts).
    const order = [...rows].sort(() => rand() - 0.5);
    const writer = new GenerationWriter(store.db, { error: (o, m) => assert.fail(`${m} ${JSON.stringify(o)}`) }, 1_000_000, Number.MAX_SAFE_INTEGER);
    for (let i = 0; i < order.length; ) {
      const n = 1 + Math.floor(rand() ** 2 * 400);
      for (const r of order.slice(i, i + n)) writer.enqueue(r);
      await writer.flush();
      i += n;
    }
    assert.equal(writer.written, rows.length);
  });
  after(async () => {
    await store?.close();
    await database?.drop();
  });

  test('the daily rollups are the hourly ones summed by UTC day, histograms and costs exact', async () => {
    for (const [hourly, daily] of [
      ['usage_hourly', 'usage_daily'],
      ['usage_hourly_tags', 'usage_daily_tags'],
    ] as const) {
      const sums = new Map<string, Record<string, unknown>>();
      for (const r of (await dump(store.db, hourly)).map((j) => JSON.parse(j) as Record<string, string | number>)) {
        const day = Math.floor(Number(r.hour) / DAY) * DAY;
        const id = JSON.stringify([day, r.key_id, r.tag ?? null, r.model, r.provider]);
        const s = sums.get(id) as Record<string, number | bigint | number[]> | undefined;
        if (!s) {
          const { hour: _hour, ...rest } = r;
          sums.set(id, { ...rest, day, cost_pico: BigInt(r.cost_pico!), latency_hist: JSON.parse(String(r.latency_hist)), ttft_hist: JSON.parse(String(r.ttft_hist)) });
          continue;
        }
        for (const col of ['requests', 'errors', 'refused', 'cancelled', 'prompt_tokens', 'completion_tokens', 'reasoning_tokens', 'cached_tokens']) (s[col] as number) += Number(r[col]);
        s.cost_pico = (s.cost_pico as bigint) + BigInt(r.cost_pico!);
        for (const h of ['latency_hist', 'ttft_hist']) (JSON.parse(String(r[h])) as number[]).forEach((n, i) => ((s[h] as number[])[i]! += n));
      }
      const want = [...sums.values()].map((s) => JSON.stringify({ ...s, cost_pico: String(s.cost_pico), latency_hist: JSON.stringify(s.latency_hist), ttft_hist: JSON.stringify(s.ttft_hist) }));
      const got = await dump(store.db, daily);
      assert.equal(got.length, want.length, daily);
      const norm = (j: string) => {
        const o = JSON.parse(j) as Record<string, unknown>;
        return JSON.stringify(Object.keys(o).sort().map((k) => [k, typeof o[k] === 'number' ? String(o[k]) : o[k]]));
      };
      assert.deepEqual(got.map(norm).sort(), want.map(norm).sort(), daily);
    }
    // Traffic crosses 6 UTC days; an exact cost above 2^53 survives.
    assert.equal(new Set((await store.db.selectFrom('usage_daily').select('day').execute()).map((r) => Number(r.day))).size, 6);
    const total = await store.db.selectFrom('usage_daily').select(sql<string>`cast(sum(cost_pico) as text)`.as('c')).executeTakeFirstOrThrow();
    assert.equal(total.c, String(rows.reduce((s, g) => s + BigInt(g.cost_pico), 0n)));
  });

  test('the session counts are the generations counted by day, key, session, model, provider and tag', async () => {
    const counts = { usage_daily_sessions: new Map<string, number>(), usage_daily_session_models: new Map<string, number>(), usage_daily_session_tags: new Map<string, number>() };
    const bump = (m: Map<string, number>, k: unknown[]) => m.set(JSON.stringify(k), (m.get(JSON.stringify(k)) ?? 0) + 1);
    for (const g of rows) {
      if (g.session === null) continue;
      const day = Math.floor(g.created_at / DAY) * DAY;
      const [key, model, provider] = [g.key_id ?? '', g.served_model ?? g.requested_model, g.provider ?? ''];
      bump(counts.usage_daily_sessions, [day, key, g.session]);
      bump(counts.usage_daily_session_models, [day, key, g.session, model, provider]);
      for (const tag of new Set(JSON.parse(g.tags) as string[])) bump(counts.usage_daily_session_tags, [day, key, tag, g.session, model, provider]);
    }
    const got = async (t: keyof typeof counts, cols: string[]) =>
      new Map((await store.db.selectFrom(t).selectAll().execute()).map((r) => [JSON.stringify(cols.map((c) => (c === 'day' ? Number(r[c as keyof typeof r]) : r[c as keyof typeof r]))), Number(r.requests)]));
    assert.deepEqual(await got('usage_daily_sessions', ['day', 'key_id', 'session']), counts.usage_daily_sessions);
    assert.deepEqual(await got('usage_daily_session_models', ['day', 'key_id', 'session', 'model', 'provider']), counts.usage_daily_session_models);
    assert.deepEqual(await got('usage_daily_session_tags', ['day', 'key_id', 'tag', 'session', 'model', 'provider']), counts.usage_daily_session_tags);
  });

  test('every query shape equals a brute-force count of the generations', async () => {
    const queries: UsageQuery[] = [];
    const filters: Partial<UsageQuery>[] = [{}, { keyId: 'key_a' }, { keyId: null }, { model: 'm2' }, { provider: 'p1' }, { tag: 'y' }, { keyId: 'key_b', model: 'm1', provider: 'p2', tag: 'x' }];
    // Ranges on and off day boundaries: whole days only; partial days at either edge; inside one
    // day; across one midnight; ending after the traffic (the last partial day is quiet) or
    // inside it (busy); and in the future.
    const ranges: [number, number][] = [
      [B - 2 * DAY, B + 4 * DAY],
      [B - DAY + 5 * HOUR, B + 3 * DAY + 7 * HOUR],
      [B + 3 * DAY - 20 * HOUR, B + 3 * DAY + 18 * HOUR],
      [B + 3 * DAY + 2 * HOUR, B + 3 * DAY + 20 * HOUR],
      [B + DAY + 3 * HOUR + 17, B + DAY + 9 * HOUR - 5],
      [B + 23 * HOUR + 1, B + DAY + 2 * HOUR],
      [B - 5 * DAY, B + 1],
      [B + 3 * DAY + 13 * HOUR, B + 9 * DAY],
    ];
    for (const [from, to] of ranges) {
      for (const bucket of ['hour', 'day'] as const) {
        if (to - from > USAGE_MAX_RANGE_DAYS[bucket] * DAY) continue;
        for (const groupBy of [null, ...MODELLED_GROUPS]) for (const f of filters) queries.push({ from, to, bucket, groupBy, ...f });
      }
    }
    for (let i = 0; i < 150; i++) {
      const bucket = pick(['hour', 'day'] as const);
      const to = B - 3 * DAY + Math.floor(rand() * 9 * DAY);
      queries.push({ from: to - 1 - Math.floor(rand() * 7 * DAY), to, bucket, groupBy: pick([null, ...MODELLED_GROUPS, 'session']), ...pick(filters) });
    }
    let sessionCuts = 0;
    for (const q of queries) {
      const want = expected(rows, q);
      assert.deepEqual(await queryUsage(store.db, q), want, JSON.stringify(q));
      if (q.groupBy === 'session' && new Set(want.data.map((r) => r.group)).size === TOP_SESSIONS) sessionCuts++;
    }
    assert.ok(sessionCuts > 10, `the top-${TOP_SESSIONS} cut was exercised (${sessionCuts} queries)`);
  });

  test('hour buckets are refused past the cap, with a hint to use day buckets', async () => {
    const q: UsageQuery = { from: B - 2 * DAY, to: B - 2 * DAY + USAGE_MAX_RANGE_DAYS.hour * DAY + 1, bucket: 'hour', groupBy: null };
    await assert.rejects(queryUsage(store.db, q), (err: unknown) => err instanceof GatewayError && err.code === 'invalid_request' && err.param === 'from' && /bucket=day/.test(err.message));
    assert.equal((await queryUsage(store.db, { ...q, bucket: 'day' })).totals.requests, rows.length);
  });

  test('the 0006 backfill moves the refusals counted under errors to refused, exactly as the writer counts them', async () => {
    const before = Object.fromEntries(await Promise.all(SUM_ROLLUPS.map(async (t) => [t, await dump(store.db, t)] as const)));
    const refusals = rows.filter((g) => g.status === 'error' && g.provider === null && g.error_code !== 'upstream_error').length;
    const errors = rows.filter((g) => g.status === 'error').length - refusals;
    for (const t of ['usage_hourly', 'usage_daily'] as const) {
      const sums = await store.db.selectFrom(t).select((eb) => [eb.fn.sum<number>('errors').as('e'), eb.fn.sum<number>('refused').as('r')]).executeTakeFirstOrThrow();
      assert.deepEqual([Number(sums.e), Number(sums.r)], [errors, refusals], t);
    }
    assert.ok(refusals > 100 && errors > 100, `${refusals} refusals, ${errors} errors`);
    await undoRefusedColumn(store.db, SUM_ROLLUPS);
    assert.deepEqual(await migrate(store.db), ['0006_refused_in_rollups']);
    for (const t of SUM_ROLLUPS) assert.deepEqual(await dump(store.db, t), before[t], t);
    // A refusal the rollups never counted (a generation older than them) moves nothing: no count goes negative.
    await store.db.insertInto('generations').values({ ...makeRow(99_998), created_at: B - 9 * DAY, status: 'error', provider: null, served_model: null, error_code: 'invalid_request', tags: '["x"]' }).execute();
    await undoRefusedColumn(store.db, SUM_ROLLUPS);
    assert.deepEqual(await migrate(store.db), ['0006_refused_in_rollups']);
    for (const t of SUM_ROLLUPS) assert.deepEqual(await dump(store.db, t), before[t], t);
    await store.db.deleteFrom('generations').where('id', '=', 'gen_099998').execute();
  });

  test('the 0004 backfill rebuilds exactly what the writer wrote', async () => {
    const before = Object.fromEntries(await Promise.all(ROLLUPS.map(async (t) => [t, await dump(store.db, t)] as const)));
    for (const t of ROLLUPS) await store.db.schema.dropTable(t).execute();
    await undoRefusedColumn(store.db, ['usage_hourly', 'usage_hourly_tags']);
    await store.db.deleteFrom('migrations_applied').where('name', '=', '0004_daily_rollups').execute();
    assert.deepEqual(await migrate(store.db), ['0004_daily_rollups', '0006_refused_in_rollups']);
    for (const t of ROLLUPS) {
      assert.ok(before[t]!.length > 0, t);
      assert.deepEqual(await dump(store.db, t), before[t], t);
    }
    // And the writer goes on from there.
    const writer = new GenerationWriter(store.db, { error: (o, m) => assert.fail(`${m} ${JSON.stringify(o)}`) });
    const extra = { ...makeRow(99_999), created_at: B + HOUR, key_id: 'key_a', session: 's1', tags: '["x"]' };
    writer.enqueue(extra);
    await writer.flush();
    rows.push(extra);
    const q: UsageQuery = { from: B - 2 * DAY, to: B + 4 * DAY, bucket: 'day', groupBy: 'session', keyId: 'key_a', tag: 'x' };
    assert.deepEqual(await queryUsage(store.db, q), expected(rows, q));
  });
});
