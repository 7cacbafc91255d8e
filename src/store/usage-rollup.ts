import { sql, type Kysely, type Transaction } from 'kysely';
import { sqlDialectOf, type UpsertShape } from './sql-dialect.js';
import { isRefusal } from './refusal.js';
import type { Pace } from './loop-pace.js';
import { LATENCY_BUCKETS_MS, type Database, type GenerationsTable } from './schema.js';

/** Index of the histogram bucket a duration (ms) falls in. */
export function latencyBucket(ms: number): number {
  let i = 0;
  while (i < LATENCY_BUCKETS_MS.length && !(ms <= LATENCY_BUCKETS_MS[i]!)) i++;
  return i;
}

/**
 * The distinct tags of a row, in first-seen order, from its `tags` JSON text. The text of no tags
 * (`[]`, what most records hold) is not parsed.
 * @throws SyntaxError when `tags` is not JSON (the writer then stores the row reduced).
 */
function rowTags(tags: string): readonly string[] {
  if (tags === '[]') return NO_TAGS;
  const list = JSON.parse(tags) as string[];
  return Array.isArray(list) && list.length < 2 ? list : [...new Set(list)];
}
const NO_TAGS: readonly string[] = [];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The rollup tables with latency histograms, and the column holding each one's period start. */
export type RollupTable = 'usage_hourly' | 'usage_hourly_tags' | 'usage_daily' | 'usage_daily_tags';
export const ROLLUP_TIME_COLUMN = { usage_hourly: 'hour', usage_hourly_tags: 'hour', usage_daily: 'day', usage_daily_tags: 'day' } as const satisfies Record<RollupTable, string>;

/** Running sums of one rollup row (a period, key, tag, model and provider). */
interface RollupAcc {
  /** Start of the period (hour or UTC day), unix ms. */
  time: number;
  key_id: string;
  tag?: string;
  model: string;
  provider: string;
  requests: number;
  /** Errors that are not refusals. */
  errors: number;
  /** Refusals ({@link isRefusal}). */
  refused: number;
  cancelled: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  cached_tokens: number;
  cost_pico: bigint;
  latency: number[];
  ttft: number[];
}

function emptyHist(): number[] {
  return new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);
}

/** A field of a group's map key, length-prefixed so that no two groups share a key whatever the strings hold. */
const field = (s: string): string => `${s.length}:${s}|`;

/** Add one generation (its latency buckets and cost already computed) to the group `id`, made on first use. */
function accumulate(map: Map<string, RollupAcc>, id: string, time: number, keyId: string, tag: string | undefined, model: string, provider: string, row: GenerationsTable, cost: bigint, latency: number, ttft: number): void {
  let a = map.get(id);
  if (!a) {
    a = { time, key_id: keyId, model, provider, requests: 0, errors: 0, refused: 0, cancelled: 0, prompt_tokens: 0, completion_tokens: 0, reasoning_tokens: 0, cached_tokens: 0, cost_pico: 0n, latency: emptyHist(), ttft: emptyHist() };
    if (tag !== undefined) a.tag = tag;
    map.set(id, a);
  }
  a.requests++;
  if (isRefusal(row)) a.refused++;
  else if (row.status === 'error') a.errors++;
  if (row.status === 'cancelled') a.cancelled++;
  a.prompt_tokens += row.prompt_tokens ?? 0;
  a.completion_tokens += row.completion_tokens ?? 0;
  a.reasoning_tokens += row.reasoning_tokens ?? 0;
  a.cached_tokens += row.cached_tokens ?? 0;
  a.cost_pico += cost;
  a.latency[latency]!++;
  if (ttft >= 0) a.ttft[ttft]!++;
}

/** The daily groups of a batch: its hourly groups added up by UTC day. */
function byDay(hourly: Map<string, RollupAcc>): Map<string, RollupAcc> {
  const days = new Map<string, RollupAcc>();
  for (const h of hourly.values()) {
    const day = Math.floor(h.time / DAY) * DAY;
    const id = groupId(day, h.key_id, h.tag, h.model, h.provider);
    const d = days.get(id);
    if (!d) {
      days.set(id, { ...h, time: day, latency: [...h.latency], ttft: [...h.ttft] });
      continue;
    }
    d.requests += h.requests;
    d.errors += h.errors;
    d.refused += h.refused;
    d.cancelled += h.cancelled;
    d.prompt_tokens += h.prompt_tokens;
    d.completion_tokens += h.completion_tokens;
    d.reasoning_tokens += h.reasoning_tokens;
    d.cached_tokens += h.cached_tokens;
    d.cost_pico += h.cost_pico;
    for (let i = 0; i < d.latency.length; i++) {
      d.latency[i]! += h.latency[i]!;
      d.ttft[i]! += h.ttft[i]!;
    }
  }
  return days;
}

/** Add two JSON histograms (SQLite/PostgreSQL-neutral: merged in JS after a read). */
function mergeHist(a: string, b: number[]): string {
  const x = JSON.parse(a) as number[];
  return JSON.stringify(b.map((v, i) => v + (x[i] ?? 0)));
}

/** The key of a rollup group in the batch's maps. */
function groupId(time: number, keyId: string, tag: string | undefined, model: string, provider: string): string {
  return `${time}|${field(keyId)}${tag === undefined ? '' : field(tag)}${field(model)}${field(provider)}`;
}

const SUMS = ['requests', 'errors', 'refused', 'cancelled', 'prompt_tokens', 'completion_tokens', 'reasoning_tokens', 'cached_tokens', 'cost_pico'] as const;
/** Groups per statement of the refusal backfill: 5 bound values each in the read, 16 in the upsert. */
const UPSERT_CHUNK = 100;

/** A rollup table's time column, whether it has a `tag` column, and its primary key columns. */
function rollupKeyOf(table: RollupTable): { time: (typeof ROLLUP_TIME_COLUMN)[RollupTable]; tagged: boolean; key: string[] } {
  const time = ROLLUP_TIME_COLUMN[table];
  const tagged = table === 'usage_hourly_tags' || table === 'usage_daily_tags';
  return { time, tagged, key: [time, 'key_id', ...(tagged ? ['tag'] : []), 'model', 'provider'] };
}

/** The histogram columns of a rollup table. */
const HISTS = ['latency_hist', 'ttft_hist'] as const;
/** How a rollup table is upserted: its key, the sums added, the histograms replaced (merged in JS). */
const rollupShape = (table: RollupTable): UpsertShape => ({ table, key: rollupKeyOf(table).key, add: SUMS, replace: HISTS });
const ROLLUP_SHAPES: Record<RollupTable, UpsertShape> = { usage_hourly: rollupShape('usage_hourly'), usage_hourly_tags: rollupShape('usage_hourly_tags'), usage_daily: rollupShape('usage_daily'), usage_daily_tags: rollupShape('usage_daily_tags') };

/**
 * Add a batch's groups to a rollup table: a read of the groups' existing histograms, then an
 * `INSERT … ON CONFLICT DO UPDATE` adding the sums in SQL and writing the histograms merged in JS
 * (SQLite/PostgreSQL-neutral; the writer's transaction keeps the read and the write together).
 * The statements are the dialect's `readByKey` and `upsertAdding`: prepared once on SQLite, one
 * per 100 groups on PostgreSQL.
 */
async function upsert(trx: Transaction<Database>, table: RollupTable, groups: Iterable<RollupAcc>, pace: Pace | undefined): Promise<void> {
  const { tagged } = rollupKeyOf(table);
  const all = [...groups];
  if (all.length === 0) return;
  const shape = ROLLUP_SHAPES[table];
  const dialect = sqlDialectOf(trx);
  const keys = all.map((a) => (tagged ? [a.time, a.key_id, a.tag, a.model, a.provider] : [a.time, a.key_id, a.model, a.provider]));
  const existing = await dialect.readByKey(trx, shape, HISTS, keys, pace);
  const values = all.map((a, i) => {
    const e = existing[i] as { latency_hist: string; ttft_hist: string } | undefined;
    return [
      ...keys[i]!,
      ...SUMS.map((col) => a[col]),
      e ? mergeHist(e.latency_hist, a.latency) : JSON.stringify(a.latency),
      e ? mergeHist(e.ttft_hist, a.ttft) : JSON.stringify(a.ttft),
    ];
  });
  await dialect.upsertAdding(trx, shape, values, pace);
}

/** The session-count tables and their keys (every column but `requests`). */
type SessionCountTable = 'usage_daily_sessions' | 'usage_daily_session_models' | 'usage_daily_session_tags';
const SESSION_COUNT_KEYS = {
  usage_daily_sessions: ['day', 'key_id', 'session'],
  usage_daily_session_models: ['day', 'key_id', 'session', 'model', 'provider'],
  usage_daily_session_tags: ['day', 'key_id', 'tag', 'session', 'model', 'provider'],
} as const satisfies Record<SessionCountTable, readonly string[]>;

type SessionCount = Record<string, string | number> & { requests: number };

/** The per-(day, key, session) counts of a batch: its per-(day, key, session, model, provider) ones added up. */
function bySession(models: Map<string, SessionCount>): Map<string, SessionCount> {
  const sessions = new Map<string, SessionCount>();
  for (const m of models.values()) {
    const id = `${m.day}|${field(String(m.key_id))}${field(String(m.session))}`;
    const c = sessions.get(id);
    if (c) c.requests += m.requests;
    else sessions.set(id, { day: m.day!, key_id: m.key_id!, session: m.session!, requests: m.requests });
  }
  return sessions;
}

/** How each session-count table is upserted: its key, `requests` added. */
const sessionShape = (table: SessionCountTable): UpsertShape => ({ table, key: SESSION_COUNT_KEYS[table], add: ['requests'], replace: [] });
const SESSION_SHAPES: Record<SessionCountTable, UpsertShape> = {
  usage_daily_sessions: sessionShape('usage_daily_sessions'),
  usage_daily_session_models: sessionShape('usage_daily_session_models'),
  usage_daily_session_tags: sessionShape('usage_daily_session_tags'),
};

/** Add counts to a session-count table: `INSERT … ON CONFLICT … DO UPDATE` through the dialect's `upsertAdding`. */
async function addSessionCounts(trx: Transaction<Database>, table: SessionCountTable, counts: Iterable<SessionCount>, pace: Pace | undefined): Promise<void> {
  const shape = SESSION_SHAPES[table];
  const rows = [...counts].map((c) => [...shape.key.map((k) => c[k]), c.requests]);
  if (rows.length > 0) await sqlDialectOf(trx).upsertAdding(trx, shape, rows, pace);
}

/**
 * Count a batch of generation rows into the rollups, inside the writer's transaction: hourly and
 * daily (plain and per tag), the daily session counts, and the tag index. Rows are grouped first
 * (the daily groups are the batch's hourly ones added up), so a batch costs two statements per
 * 100 groups of each rollup table and one per 500 groups of each session-count table. `pace`,
 * when given, is asked between rows and between statements, and awaited when it yields (the
 * writer's `loopPace`: the event loop is not held for long by a large batch).
 */
export async function applyRollups(trx: Transaction<Database>, rows: readonly GenerationsTable[], pace?: Pace): Promise<void> {
  // Several writers (replicas on PostgreSQL): one at a time here, since histograms are read, merged and written back.
  await sqlDialectOf(trx).serializeRollupWrites(trx);
  const hourly = new Map<string, RollupAcc>();
  const hourlyTags = new Map<string, RollupAcc>();
  const sessionModels = new Map<string, SessionCount>();
  const sessionTags = new Map<string, SessionCount>();
  const tagRows: Database['generation_tags'][] = [];
  for (const row of rows) {
    const p = pace?.();
    if (p) await p;
    const created = Number(row.created_at);
    const hour = Math.floor(created / HOUR) * HOUR;
    const model = row.served_model ?? row.requested_model;
    const provider = row.provider ?? '';
    const keyId = row.key_id ?? '';
    const cost = BigInt(row.cost_pico);
    const latency = latencyBucket(row.latency_ms);
    const ttft = row.ttft_ms === null ? -1 : latencyBucket(row.ttft_ms);
    accumulate(hourly, groupId(hour, keyId, undefined, model, provider), hour, keyId, undefined, model, provider, row, cost, latency, ttft);
    const tags = rowTags(row.tags);
    for (const tag of tags) {
      accumulate(hourlyTags, groupId(hour, keyId, tag, model, provider), hour, keyId, tag, model, provider, row, cost, latency, ttft);
      tagRows.push({ generation_id: row.id, tag, created_at: row.created_at, key_id: row.key_id });
    }
    const session = row.session;
    if (session !== null) {
      const day = Math.floor(created / DAY) * DAY;
      const id = `${day}|${field(keyId)}${field(session)}${field(model)}${field(provider)}`;
      const c = sessionModels.get(id);
      if (c) c.requests++;
      else sessionModels.set(id, { day, key_id: keyId, session, model, provider, requests: 1 });
      for (const tag of tags) {
        const tagId = `${id}${field(tag)}`;
        const t = sessionTags.get(tagId);
        if (t) t.requests++;
        else sessionTags.set(tagId, { day, key_id: keyId, tag, session, model, provider, requests: 1 });
      }
    }
  }
  const groups: Record<RollupTable, Map<string, RollupAcc>> = { usage_hourly: hourly, usage_hourly_tags: hourlyTags, usage_daily: byDay(hourly), usage_daily_tags: byDay(hourlyTags) };
  const sessions: Record<SessionCountTable, Map<string, SessionCount>> = { usage_daily_sessions: bySession(sessionModels), usage_daily_session_models: sessionModels, usage_daily_session_tags: sessionTags };
  for (const table of Object.keys(groups) as RollupTable[]) await upsert(trx, table, groups[table].values(), pace);
  for (const table of Object.keys(sessions) as SessionCountTable[]) await addSessionCounts(trx, table, sessions[table].values(), pace);
  await sqlDialectOf(trx).insertRows(trx, 'generation_tags', tagRows, pace);
}

/** Refusals to move from `errors` to `refused` in one rollup row (a group of the backfill). */
interface RefusalGroup {
  time: number;
  key_id: string;
  tag?: string;
  model: string;
  n: number;
}

/**
 * Move `n` of a rollup row's errors to `refused`, for each group of `table` (provider '': a
 * refusal has none), 100 groups per two statements: a read of the rows' `errors`, then one
 * multi-row `INSERT … ON CONFLICT DO UPDATE` subtracting from `errors` and adding to `refused`
 * (the insert half never applies: only rows read are written). At most a row's `errors` move, so
 * a generation its rollups never counted cannot make a count negative.
 */
async function moveToRefused(db: Kysely<Database>, table: RollupTable, groups: Iterable<RefusalGroup>): Promise<void> {
  const { time, tagged, key } = rollupKeyOf(table);
  const all = [...groups];
  for (let i = 0; i < all.length; i += UPSERT_CHUNK) {
    const chunk = all.slice(i, i + UPSERT_CHUNK);
    const existing = await db
      .selectFrom(table as 'usage_hourly_tags')
      .select([sql<number>`${sql.ref(time)}`.as('time'), 'key_id', (tagged ? sql<string>`tag` : sql<string>`null`).as('tag'), 'model', 'errors'])
      .where('provider', '=', '')
      .where((eb) => eb.or(chunk.map((a) => eb.and([eb(sql.ref(time), '=', a.time), eb('key_id', '=', a.key_id), ...(tagged ? [eb('tag', '=', a.tag!)] : []), eb('model', '=', a.model)]))))
      .execute();
    const errors = new Map(existing.map((r) => [groupId(Number(r.time), r.key_id, r.tag ?? undefined, r.model, ''), Number(r.errors)]));
    const values = chunk.flatMap((a) => {
      const moved = Math.min(a.n, errors.get(groupId(a.time, a.key_id, a.tag, a.model, '')) ?? 0);
      if (moved <= 0) return [];
      const empty = JSON.stringify(emptyHist());
      return [{ [time]: a.time, key_id: a.key_id, ...(tagged ? { tag: a.tag } : {}), model: a.model, provider: '', ...Object.fromEntries(SUMS.map((col) => [col, 0])), refused: moved, latency_hist: empty, ttft_hist: empty }];
    });
    if (values.length === 0) continue;
    await db
      .insertInto(table)
      .values(values as never)
      .onConflict((oc) =>
        oc.columns(key as never).doUpdateSet({
          errors: sql`${sql.ref(`${table}.errors`)} - ${sql.ref('excluded.refused')}`,
          refused: sql`${sql.ref(`${table}.refused`)} + ${sql.ref('excluded.refused')}`,
        } as never),
      )
      .execute();
  }
}

/**
 * Count the refusals already in the rollups under `refused` instead of `errors` (migration
 * `0006`: rollups written before it counted every error under `errors`). Reads only the
 * candidate generations — errors with no provider, through the (provider, created_at) index, one
 * UTC day at a time — and decides with {@link isRefusal}, as the writer does; the moves are
 * grouped as the writer groups rows (hourly and daily, plain and per tag). Holds the rollup
 * writers' lock (the dialect's `serializeRollupWrites`) so that no batch commits between the
 * read of a day and its moves.
 * @returns the refusals found.
 */
export async function backfillRefused(db: Kysely<Database>): Promise<number> {
  await sqlDialectOf(db).serializeRollupWrites(db);
  const span = await db
    .selectFrom('generations')
    .select((eb) => [eb.fn.min<number | string | null>('created_at').as('lo'), eb.fn.max<number | string | null>('created_at').as('hi')])
    .where('provider', 'is', null)
    .executeTakeFirst();
  if (span?.lo === null || span?.lo === undefined || span.hi === null) return 0;
  let found = 0;
  for (let day = Math.floor(Number(span.lo) / DAY) * DAY; day <= Number(span.hi); day += DAY) {
    const rows = await db
      .selectFrom('generations')
      .select(['created_at', 'key_id', 'served_model', 'requested_model', 'status', 'error_code', 'provider', 'tags'])
      .where('provider', 'is', null)
      .where('created_at', '>=', day)
      .where('created_at', '<', day + DAY)
      .where('status', '=', 'error')
      .execute();
    const groups: Record<RollupTable, Map<string, RefusalGroup>> = { usage_hourly: new Map(), usage_hourly_tags: new Map(), usage_daily: new Map(), usage_daily_tags: new Map() };
    const count = (table: RollupTable, t: number, keyId: string, tag: string | undefined, model: string) => {
      const id = groupId(t, keyId, tag, model, '');
      const g = groups[table].get(id);
      if (g) g.n++;
      else groups[table].set(id, { time: t, key_id: keyId, ...(tag === undefined ? {} : { tag }), model, n: 1 });
    };
    for (const row of rows) {
      if (!isRefusal(row)) continue;
      found++;
      const hour = Math.floor(Number(row.created_at) / HOUR) * HOUR;
      const keyId = row.key_id ?? '';
      const model = row.served_model ?? row.requested_model;
      count('usage_hourly', hour, keyId, undefined, model);
      count('usage_daily', day, keyId, undefined, model);
      for (const tag of new Set(JSON.parse(row.tags) as string[])) {
        count('usage_hourly_tags', hour, keyId, tag, model);
        count('usage_daily_tags', day, keyId, tag, model);
      }
    }
    for (const table of Object.keys(groups) as RollupTable[]) await moveToRefused(db, table, groups[table].values());
  }
  return found;
}
