/**
 * Usage queries at scale (`npm run bench:usage`).
 *
 * Seeds a temporary SQLite file (under os.tmpdir()), or with BENCH_USAGE_DATABASE_URL a fresh
 * schema of a PostgreSQL database, with generations through the real write path
 * (GenerationWriter: the same inserts, hourly and daily rollups, daily session counts and tag
 * index in one transaction per batch), spread over 30 days across keys, models, providers, tags
 * and sessions, then times every usage query shape and the generation search (p50 and max over
 * several runs each) and prints a Markdown report: the machine, the seeding time, the table and
 * the query plans (EXPLAIN QUERY PLAN / EXPLAIN) of the request-path queries and of every search
 * filter. Hour-bucket ranges
 * over the API's cap (USAGE_MAX_RANGE_DAYS) are refused by the API, so they are not timed.
 *
 * Environment:
 *   BENCH_USAGE_ROWS  generations to seed (default 1000000)
 *   BENCH_USAGE_RUNS  runs per query (default 20)
 *   BENCH_USAGE_ONLY  time only the queries whose name contains this text
 *   BENCH_USAGE_DB    reuse (or keep) this database file instead of a fresh temporary one;
 *                     when it already holds generations, seeding is skipped
 *   BENCH_USAGE_DATABASE_URL  postgres://… : run on PostgreSQL (npm run bench:usage:pg), in a
 *                     fresh schema `op_bench_<time>` dropped at the end, or in the schema named by
 *                     BENCH_USAGE_SCHEMA (kept; seeding skipped when it holds generations)
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import { openDatabase, redactDatabaseUrl } from '../src/store/database.js';
import { sqlDialectOf } from '../src/store/sql-dialect.js';
import { GenerationWriter } from '../src/store/generation-writer.js';
import { migrate } from '../src/store/migrations.js';
import type { Database, GenerationsTable } from '../src/store/schema.js';
import { queryUsage, rollupQuery, topSessionsQuery, USAGE_MAX_RANGE_DAYS, type UsageQuery } from '../src/store/usage-queries.js';
import { searchGenerations, searchPlanQueries, type SearchQuery } from '../src/store/generation-search.js';
import { hashSecret } from '../src/store/keys.js';
import { generationObject } from '../src/server/routes/generation.js';
import { seededRandom } from '../test/helpers/seeded-random.js';

const ROWS = Number(process.env.BENCH_USAGE_ROWS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_USAGE_RUNS ?? 20);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const SPAN_DAYS = 30;

// ---------------------------------------------------------------------------------------------
// Deterministic data


const rand = seededRandom(42);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
/** Log-normal-ish duration around `median` ms. */
const duration = (median: number): number => Math.max(1, Math.round(median * Math.exp((rand() + rand() + rand() - 1.5) * 1.4)));

/** Models and the providers serving them (endpoints), with prices in picodollars per token. */
const MODELS = [
  { id: 'openai/gpt-4o-mini', providers: ['openai', 'azure'], prompt: 150_000n, completion: 600_000n },
  { id: 'openai/gpt-4o', providers: ['openai', 'azure'], prompt: 2_500_000n, completion: 10_000_000n },
  { id: 'anthropic/claude-sonnet-4', providers: ['anthropic', 'bedrock'], prompt: 3_000_000n, completion: 15_000_000n },
  { id: 'meta/llama-3.3-70b', providers: ['groq', 'together', 'fireworks'], prompt: 590_000n, completion: 790_000n },
  { id: 'qwen/qwen3-32b', providers: ['together', 'fireworks'], prompt: 300_000n, completion: 600_000n },
  { id: 'google/gemini-2.5-flash', providers: ['google'], prompt: 300_000n, completion: 2_500_000n },
] as const;
const TAGS = ['chat', 'search', 'summarize', 'extract', 'agent', 'eval', 'batch', 'support', 'code', 'translate'] as const;

/** Keys: traffic weight, the models each uses, the tags each sends. `null` is the admin key. */
interface SeedKey {
  id: string | null;
  weight: number;
  models: number[];
  tags: string[];
}
const KEYS: SeedKey[] = Array.from({ length: 12 }, (_, i) => ({
  id: i === 11 ? null : `key_bench${String(i).padStart(2, '0')}`,
  weight: i === 11 ? 0.2 : 1 / (i + 1),
  models: [...new Set([i % MODELS.length, (i * 5 + 1) % MODELS.length, (i * 7 + 3) % MODELS.length])],
  tags: [TAGS[i % TAGS.length]!, TAGS[(i * 3 + 1) % TAGS.length]!, TAGS[(i * 7 + 2) % TAGS.length]!],
}));
const KEY_WEIGHT_SUM = KEYS.reduce((s, k) => s + k.weight, 0);
function pickKey(): SeedKey {
  let r = rand() * KEY_WEIGHT_SUM;
  for (const k of KEYS) if ((r -= k.weight) <= 0) return k;
  return KEYS[0]!;
}

/** One synthetic generation created at `createdAt`. */
function makeRow(n: number, createdAt: number): GenerationsTable {
  const key = pickKey();
  const model = MODELS[pick(key.models)]!;
  const provider = pick(model.providers);
  const r = rand();
  const status = r < 0.955 ? 'success' : r < 0.99 ? 'error' : 'cancelled';
  const noProvider = status === 'error' && rand() < 0.3; // failed before any endpoint answered
  const streamed = rand() < 0.7;
  const prompt = noProvider ? null : Math.round(200 + rand() * 3000);
  const completion = noProvider ? null : status === 'cancelled' ? Math.round(rand() * 100) : Math.round(20 + rand() * 800);
  const reasoning = completion !== null && model.id.includes('gemini') ? Math.round(completion * 0.3) : null;
  const cached = prompt !== null && rand() < 0.3 ? Math.round(prompt * 0.5) : null;
  const cost = status === 'error' ? 0n : BigInt(prompt ?? 0) * model.prompt + BigInt(completion ?? 0) * model.completion;
  const tagRoll = rand();
  const tags = tagRoll < 0.4 ? [] : tagRoll < 0.85 ? [pick(key.tags)] : [...new Set([pick(key.tags), pick(key.tags)])];
  // Sessions: ~60% of requests belong to a conversation of about 20 requests within a few hours.
  const session = rand() < 0.6 ? `sess_${key.id ?? 'admin'}_${Math.floor(createdAt / (3 * HOUR))}_${Math.floor(rand() * 40)}` : null;
  const retention = rand() < 0.9 ? 'none' : pick(['7', '30']);
  const latency = duration(status === 'error' ? 300 : 1500);
  return {
    id: `gen_bench${String(n).padStart(10, '0')}${Math.floor(rand() * 1e6).toString(36)}`,
    request_id: `req_bench${n}`,
    created_at: createdAt,
    key_id: key.id,
    requested_model: model.id,
    served_model: noProvider ? null : model.id,
    provider: noProvider ? null : provider,
    endpoint: noProvider ? null : `${provider}/${model.id}`,
    upstream_model: noProvider ? null : model.id.split('/')[1]!,
    status,
    error_code: status === 'error' ? (noProvider ? 'no_endpoint_available' : 'upstream_overloaded') : status === 'cancelled' ? 'client_disconnected' : null,
    error_message: null,
    http_status: status === 'error' ? 503 : status === 'cancelled' ? 499 : 200,
    finish_reason: status === 'success' ? 'stop' : null,
    native_finish_reason: status === 'success' ? 'stop' : null,
    api: 'chat',
    streamed: streamed ? 1 : 0,
    cancelled: status === 'cancelled' ? 1 : 0,
    prompt_tokens: prompt,
    completion_tokens: completion,
    reasoning_tokens: reasoning,
    cached_tokens: cached,
    cache_write_tokens: null,
    usage_source: noProvider ? null : 'upstream',
    cost_pico: cost,
    latency_ms: latency,
    ttft_ms: streamed && !noProvider ? Math.min(latency, duration(350)) : null,
    tags: JSON.stringify(tags),
    session,
    retention,
    detail: JSON.stringify({ attempts: [{ endpoint: `${provider}/${model.id}`, provider, model: model.id, status: status === 'error' ? 503 : 200, error_code: null, latency_ms: latency, reason: 'weighted-random' }], routing_reason: 'weighted-random', dropped_parameters: [], warnings: [] }),
    content: retention === 'none' ? null : JSON.stringify({ request: { messages: [{ role: 'user', content: `question ${n}` }] }, output: { content: `answer ${n}` } }),
  };
}

async function seed(db: Kysely<Database>, rows: number, now: number): Promise<number> {
  const silent = { error: (obj: object, msg: string) => console.error(msg, obj) };
  const writer = new GenerationWriter(db, silent, 1_000_000, Number.MAX_SAFE_INTEGER);
  const start = now - SPAN_DAYS * DAY;
  const step = (SPAN_DAYS * DAY) / rows;
  const batch = 10_000;
  const t0 = performance.now();
  for (let i = 0; i < rows; i += batch) {
    for (let j = i; j < Math.min(rows, i + batch); j++) writer.enqueue(makeRow(j, Math.floor(start + j * step + rand() * step)));
    await writer.flush();
    if ((i / batch) % 10 === 9) process.stderr.write(`  seeded ${i + batch} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  }
  if (writer.written !== rows) throw new Error(`writer wrote ${writer.written} of ${rows} rows`);
  // Request-path key table: a few hundred keys, as a deployment would have.
  for (let i = 0; i < 500; i++) {
    await db.insertInto('api_keys').values({ id: `key_extra${i}`, name: `extra ${i}`, hash: hashSecret(`secret-${i}`), prefix: 'op-xxxxx', disabled: 0, created_at: now, expires_at: null, settings: '{}' }).execute();
  }
  for (const k of KEYS) {
    if (k.id) await db.insertInto('api_keys').values({ id: k.id, name: k.id, hash: hashSecret(`secret-${k.id}`), prefix: 'op-xxxxx', disabled: 0, created_at: now, expires_at: null, settings: '{}' }).execute();
  }
  return (performance.now() - t0) / 1000;
}

// ---------------------------------------------------------------------------------------------
// Timing

interface Timing {
  name: string;
  /** Fastest run: the closest to the query's own cost when other processes share the CPU. */
  min: number;
  p50: number;
  max: number;
  rows: number;
}

const ONLY = process.env.BENCH_USAGE_ONLY;

async function time(name: string, fn: () => Promise<number>): Promise<Timing> {
  const ms: number[] = [];
  if (ONLY && !name.includes(ONLY)) return { name, min: 0, p50: 0, max: 0, rows: -1 };
  let rows = 0;
  rows = await fn(); // warm-up: the first run reads pages from disk into the cache
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    rows = await fn();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return { name, min: ms[0]!, p50: ms[Math.floor((ms.length - 1) / 2)]!, max: ms[ms.length - 1]!, rows };
}

const fmt = (ms: number) => ms.toFixed(1);

const plan = (db: Kysely<Database>, query: CompiledQuery): Promise<string[]> => sqlDialectOf(db).explain(db, query);

/** The database to seed and query: a SQLite file, or a PostgreSQL schema. */
async function openBenchDatabase() {
  const pgUrl = process.env.BENCH_USAGE_DATABASE_URL;
  if (pgUrl) {
    const keepSchema = process.env.BENCH_USAGE_SCHEMA;
    const schema = keepSchema ?? `op_bench_${Date.now()}`;
    const admin = openDatabase(pgUrl);
    await sql`create schema if not exists ${sql.id(schema)}`.execute(admin.db);
    const u = new URL(pgUrl);
    u.searchParams.set('options', `-c search_path=${schema}`);
    const store = openDatabase(u.toString());
    return {
      store,
      where: `${redactDatabaseUrl(pgUrl)} schema ${schema}`,
      size: async () => Number((await sql<{ n: string }>`select sum(pg_total_relation_size(c.oid)) as n from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = ${schema} and c.relkind = 'r'`.execute(admin.db)).rows[0]!.n),
      engine: async () => `${(await sql<{ v: string }>`select version() as v`.execute(store.db)).rows[0]!.v.split(' on ')[0]} (pg driver), shared_buffers ${(await sql<{ shared_buffers: string }>`show shared_buffers`.execute(store.db)).rows[0]!.shared_buffers}`,
      settle: async () => {
        await sql`vacuum analyze`.execute(store.db);
      },
      async cleanup() {
        await store.close();
        if (!keepSchema) await sql`drop schema ${sql.id(schema)} cascade`.execute(admin.db);
        await admin.close();
      },
    };
  }
  const keep = process.env.BENCH_USAGE_DB;
  const dir = keep ? undefined : mkdtempSync(join(os.tmpdir(), 'op-usage-bench-'));
  const file = keep ?? join(dir!, 'usage.db');
  const store = openDatabase(`sqlite:${file}`);
  return {
    store,
    where: file,
    size: async () => statSync(file).size,
    engine: async () => `SQLite ${(await sql<{ v: string }>`select sqlite_version() as v`.execute(store.db)).rows[0]!.v} (better-sqlite3), WAL, synchronous=NORMAL`,
    settle: async () => {
      await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(store.db);
    },
    async cleanup() {
      await store.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      else if (keep && !existsSync(keep)) console.error(`${keep} is gone`);
    },
  };
}

async function main(): Promise<void> {
  const bench = await openBenchDatabase();
  const { store } = bench;
  const db = store.db;
  const out: string[] = [];
  const log = (line = '') => {
    out.push(line);
    console.log(line);
  };
  try {
    await migrate(db);
    const existing = Number((await db.selectFrom('generations').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    let now: number;
    let seedSeconds: number | null = null;
    if (existing === 0) {
      now = Math.floor(Date.now() / HOUR) * HOUR + 30 * 60_000;
      process.stderr.write(`seeding ${ROWS} generations into ${bench.where}\n`);
      seedSeconds = await seed(db, ROWS, now);
      await bench.settle();
    } else {
      const last = await db.selectFrom('generations').select('created_at').orderBy('created_at', 'desc').limit(1).executeTakeFirstOrThrow();
      now = Number(last.created_at) + 1;
    }
    const count = Number((await db.selectFrom('generations').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const counts = async (t: keyof Database) => Number((await db.selectFrom(t).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n).toLocaleString('en-US');
    const sessions = Number((await db.selectFrom('generations').select((eb) => eb.fn.count<number>('session').distinct().as('n')).executeTakeFirstOrThrow()).n);

    const cpus = os.cpus();
    log('### Machine and data');
    log();
    log(`- CPU: ${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown'}; memory ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB; Node ${process.version}; ${os.platform()} ${os.release()}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' / ')} (1/5/15 min) when the timings started`);
    log(`- ${await bench.engine()}; data ${((await bench.size()) / 2 ** 20).toFixed(0)} MiB`);
    log(`- ${count.toLocaleString('en-US')} generations over ${SPAN_DAYS} days, ${KEYS.length} keys (one the admin key), ${MODELS.length} models on ${new Set(MODELS.flatMap((m) => m.providers)).size} providers, ${TAGS.length} tags, ${sessions.toLocaleString('en-US')} sessions`);
    log(`- rollup rows: usage_hourly ${await counts('usage_hourly')}, usage_hourly_tags ${await counts('usage_hourly_tags')}; usage_daily ${await counts('usage_daily')}, usage_daily_tags ${await counts('usage_daily_tags')}`);
    log(
      `- session counts: usage_daily_sessions ${await counts('usage_daily_sessions')}, usage_daily_session_models ${await counts('usage_daily_session_models')}, usage_daily_session_tags ${await counts('usage_daily_session_tags')}; generation_tags ${await counts('generation_tags')}`,
    );
    if (seedSeconds !== null) log(`- seeding through GenerationWriter (10,000 rows per transaction): ${seedSeconds.toFixed(0)} s (${Math.round(ROWS / seedSeconds).toLocaleString('en-US')} rows/s, ${((seedSeconds * 1e6) / ROWS).toFixed(1)} µs per record)`);
    log(`- ${RUNS} timed runs per query after one warm-up run; times in ms, measured in-process (the query functions the routes call, JSON shaping included, HTTP excluded)`);
    log();

    // Usage queries
    const timings: Timing[] = [];
    const ranges = [
      ['24 h', DAY],
      ['7 d', 7 * DAY],
      ['30 d', 30 * DAY],
    ] as const;
    const someKey = KEYS[1]!.id!;
    const refused: string[] = [];
    for (const [label, span] of ranges) {
      for (const bucket of ['hour', 'day'] as const) {
        if (span > USAGE_MAX_RANGE_DAYS[bucket] * DAY) {
          refused.push(`${label} bucket=${bucket}`);
          continue;
        }
        for (const groupBy of [null, 'model', 'provider', 'key', 'tag', 'session'] as const) {
          const q: UsageQuery = { from: now - span, to: now, bucket, groupBy };
          timings.push(await time(`usage ${label} bucket=${bucket} group_by=${groupBy ?? 'none'}`, async () => (await queryUsage(db, q)).data.length));
        }
      }
      const base: UsageQuery = { from: now - span, to: now, bucket: 'day', groupBy: 'model' };
      timings.push(await time(`usage ${label} bucket=day group_by=model, key_id (one key's view)`, async () => (await queryUsage(db, { ...base, keyId: someKey })).data.length));
      const tagBucket = span <= USAGE_MAX_RANGE_DAYS.hour * DAY ? 'hour' : 'day';
      timings.push(await time(`usage ${label} bucket=${tagBucket} group_by=none, tag filter`, async () => (await queryUsage(db, { ...base, bucket: tagBucket, groupBy: null, tag: 'search' })).data.length));
      timings.push(await time(`usage ${label} bucket=day group_by=key, model+provider filter`, async () => (await queryUsage(db, { ...base, groupBy: 'key', model: 'meta/llama-3.3-70b', provider: 'groq' })).data.length));
      timings.push(await time(`usage ${label} bucket=day group_by=session, key_id`, async () => (await queryUsage(db, { ...base, groupBy: 'session', keyId: someKey })).data.length));
      timings.push(await time(`usage ${label} bucket=day group_by=session, model filter`, async () => (await queryUsage(db, { ...base, groupBy: 'session', model: 'qwen/qwen3-32b' })).data.length));
      timings.push(await time(`usage ${label} bucket=day group_by=session, tag filter`, async () => (await queryUsage(db, { ...base, groupBy: 'session', tag: 'search' })).data.length));
    }

    // Generation search
    const searches: [string, SearchQuery][] = [];
    const newest = await searchGenerations(db, { limit: 50 });
    const sample = (await db.selectFrom('generations').select(['session']).where('session', 'is not', null).where('created_at', '<', now - 2 * DAY).limit(1).executeTakeFirstOrThrow()).session!;
    searches.push(['search, no filter', { limit: 50 }]);
    searches.push(['search, model', { limit: 50, model: 'openai/gpt-4o' }]);
    searches.push(['search, provider', { limit: 50, provider: 'bedrock' }]);
    searches.push(['search, status=error', { limit: 50, status: 'error' }]);
    searches.push(['search, status=cancelled', { limit: 50, status: 'cancelled' }]);
    searches.push(['search, key_id', { limit: 50, keyId: someKey }]);
    searches.push(['search, tag', { limit: 50, tag: 'agent' }]);
    searches.push(['search, session', { limit: 50, session: sample }]);
    searches.push(['search, from/to (one hour, 10 days ago)', { limit: 50, from: now - 10 * DAY, to: now - 10 * DAY + HOUR }]);
    searches.push(['search, key_id + model + status=error', { limit: 50, keyId: someKey, model: MODELS[KEYS[1]!.models[0]!]!.id, status: 'error' }]);
    searches.push(['search, key_id + tag', { limit: 50, keyId: someKey, tag: KEYS[1]!.tags[0]! }]);
    searches.push(['search, model + provider + from/to (7 d)', { limit: 50, model: 'meta/llama-3.3-70b', provider: 'groq', from: now - 7 * DAY, to: now }]);
    searches.push(['search, limit 200', { limit: 200 }]);
    // A cursor deep in the past: the row at ~29 days.
    const deep = await db.selectFrom('generations').select(['created_at', 'id']).where('created_at', '<', now - 29 * DAY).orderBy('created_at', 'desc').limit(1).executeTakeFirstOrThrow();
    const deepCursor = Buffer.from(JSON.stringify([Number(deep.created_at), deep.id])).toString('base64url');
    searches.push(['search, deep cursor (29 days back)', { limit: 50, cursor: deepCursor }]);
    searches.push(['search, key_id, deep cursor', { limit: 50, keyId: someKey, cursor: deepCursor }]);
    if (newest.next_cursor) searches.push(['search, second page', { limit: 50, cursor: newest.next_cursor }]);
    for (const [name, q] of searches) timings.push(await time(name, async () => (await searchGenerations(db, q)).rows.map((r) => generationObject({ ...r, content: null })).length));

    log('### Timings');
    log();
    log('| query | rows returned | min ms | p50 ms | max ms |');
    log('|---|---:|---:|---:|---:|');
    for (const t of timings.filter((x) => x.rows >= 0)) log(`| ${t.name} | ${t.rows} | ${fmt(t.min)} | ${fmt(t.p50)} | ${fmt(t.max)}${t.max >= 100 ? ' ⚠' : ''} |`);
    const slow = timings.filter((t) => t.p50 >= 100);
    log();
    log(slow.length === 0 ? `All ${timings.length} queries: p50 under 100 ms; slowest max ${fmt(Math.max(...timings.map((t) => t.max)))} ms.` : `Over 100 ms (p50): ${slow.map((t) => t.name).join('; ')}`);
    if (refused.length > 0) log(`Not timed (refused with a 400, over the ${USAGE_MAX_RANGE_DAYS.hour}-day hour-bucket cap): ${refused.join('; ')}.`);
    log();

    // Query plans
    log('### Query plans');
    log();
    log('Request path:');
    log();
    log('```');
    const keyLookup = db.selectFrom('api_keys').selectAll().where('hash', '=', hashSecret('secret-key_extra7')).compile();
    const genById = db.selectFrom('generations').selectAll().where('id', '=', newest.rows[0]?.id ?? 'x').compile();
    const periodStart = Math.floor(now / DAY) * DAY;
    const spend = db.selectFrom('usage_hourly').select((eb) => eb.fn.sum<number>('cost_pico').as('spent')).where('key_id', '=', someKey).where('hour', '>=', periodStart).compile();
    for (const [name, q] of [
      ['key lookup by hash', keyLookup],
      ['generation by id', genById],
      ['key spend this period (usage_hourly by key_id, hour)', spend],
    ] as const) {
      log(`${name}: ${q.sql}`);
      for (const line of await plan(db, q)) log(`  ${line}`);
    }
    log('```');
    log();
    log('Usage queries (rollup reads, and the top-sessions read of group_by session: daily session counts for whole days, generations for the partial days):');
    log();
    log('```');
    const end = Math.ceil(now / HOUR) * HOUR;
    const lastDay = Math.floor(end / DAY) * DAY;
    const month: UsageQuery = { from: Math.floor((now - 30 * DAY) / DAY) * DAY, to: end, bucket: 'day', groupBy: 'model' };
    const days: UsageQuery = { ...month, to: lastDay };
    const week: UsageQuery = { ...month, bucket: 'hour', from: Math.floor((now - 7 * DAY) / HOUR) * HOUR };
    for (const [name, q] of [
      ['30 d, bucket=day, group_by=model: whole days', rollupQuery(db, days, 'usage_daily', 'model', true)],
      ['30 d, bucket=day, group_by=model: the last, partial day', rollupQuery(db, { ...month, from: lastDay }, 'usage_hourly', 'model', true)],
      ['30 d, one key (whole days)', rollupQuery(db, { ...days, keyId: someKey }, 'usage_daily', 'model', true)],
      ['30 d, bucket=day, group_by=tag (whole days)', rollupQuery(db, days, 'usage_daily_tags', 'tag', true)],
      ['30 d, tag filter (whole days)', rollupQuery(db, { ...days, tag: 'search' }, 'usage_daily_tags', null, true)],
      ['7 d, bucket=hour, group_by=key', rollupQuery(db, { ...week, groupBy: 'key' }, 'usage_hourly', 'key_id', true)],
      ['7 d, bucket=hour, group_by=tag', rollupQuery(db, { ...week, groupBy: 'tag' }, 'usage_hourly_tags', 'tag', true)],
      ['24 h, top sessions', topSessionsQuery(db, { ...week, from: Math.floor((now - DAY) / HOUR) * HOUR, groupBy: 'session' })],
      ['30 d, top sessions', topSessionsQuery(db, { ...month, groupBy: 'session' })],
      ['30 d, top sessions of one key', topSessionsQuery(db, { ...month, groupBy: 'session', keyId: someKey })],
      ['30 d, top sessions of a model', topSessionsQuery(db, { ...month, groupBy: 'session', model: 'qwen/qwen3-32b' })],
      ['30 d, top sessions of a tag', topSessionsQuery(db, { ...month, groupBy: 'session', tag: 'search' })],
    ] as const) {
      log(`${name}:`);
      for (const line of await plan(db, q.compile())) log(`  ${line}`);
    }
    log('```');
    log();
    log('Generation search (each filter; a scan of generations without an index, `SCAN` or `Seq Scan`, would be a miss):');
    log();
    log('```');
    let misses = 0;
    for (const [name, q] of searches) {
      for (const compiled of await searchPlanQueries(db, q)) {
        const lines = await plan(db, compiled);
        if (sqlDialectOf(db).scansWithoutIndex(lines, 'generations') || sqlDialectOf(db).scansWithoutIndex(lines, 'g')) misses++;
        log(`${name}:`);
        for (const line of lines) log(`  ${line}`);
      }
    }
    log('```');
    log();
    log(misses === 0 ? 'No search plan scans generations without an index.' : `${misses} search plan(s) scan generations without an index.`);
  } finally {
    await bench.cleanup();
  }
}

await main();
