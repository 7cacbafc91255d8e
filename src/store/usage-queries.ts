import { sql, type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from 'kysely';
import { picoToUsdString } from '../accounting/cost.js';
import { GatewayError } from '../errors/gateway-error.js';
import { gatewayErrorOf } from './database.js';
import { sqlDialectOf } from './sql-dialect.js';
import { isRefusal } from './refusal.js';
import { LATENCY_BUCKETS_MS, type Database, type GenerationsTable } from './schema.js';
import { latencyBucket, ROLLUP_TIME_COLUMN, type RollupTable } from './usage-rollup.js';

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/**
 * Bucket sizes. `minute` (ranges up to 6 hours) is read from `generations` through its time
 * index, the rollups being hourly: for charts of fresh traffic, where an hour is one bar.
 */
export const USAGE_BUCKETS = ['minute', 'hour', 'day'] as const;
export type UsageBucket = (typeof USAGE_BUCKETS)[number];
export const USAGE_GROUPS = ['model', 'provider', 'key', 'tag', 'session', 'team', 'user'] as const;
export type UsageGroupBy = (typeof USAGE_GROUPS)[number] | null;

/** Sessions returned at most by `group_by: session` (the most requests first). */
export const TOP_SESSIONS = 100;

/**
 * Longest range (days) per bucket size. Hour buckets are read from the hourly rollups row by row
 * (whatever else is stored, an hour bucket needs its hours), so their range is capped where a
 * query still answers in well under 100 ms at a million generations a month; day buckets read
 * the daily rollups.
 */
export const USAGE_MAX_RANGE_DAYS: Readonly<Record<UsageBucket, number>> = { minute: 0.25, hour: 7, day: 400 };

/** A usage query. Times are unix ms; see {@link queryUsage} for how they are aligned. */
export interface UsageQuery {
  from: number;
  to: number;
  bucket: UsageBucket;
  groupBy: UsageGroupBy;
  /** Served model (else requested), as in the rollups. */
  model?: string | undefined;
  provider?: string | undefined;
  /** A key's id, or null for the admin key's own requests. */
  keyId?: string | null | undefined;
  tag?: string | undefined;
  /** A team's id: the generations of the keys that belong to it now. */
  teamId?: string | undefined;
}

/** The ids of a team's keys, as a subquery (`key_id in (…)`). */
const teamKeys = (db: Kysely<Database>, teamId: string) => db.selectFrom('api_keys').select('api_keys.id').where('api_keys.team_id', '=', teamId);

/** p50/p90/p99 in ms, approximate to the histogram bucket bounds. */
export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
}

/** The aggregates of one bucket/group, or of the whole range. */
export interface UsageStats {
  /** Every generation: successes + `errors` + `refused` + `cancelled`. */
  requests: number;
  /** Generations that failed at a provider or in the gateway (refusals not included). */
  errors: number;
  /**
   * Generations refused for the client's own reason with no provider answering: a 4xx of
   * `REFUSAL_CODES` in refusal.ts (a 400 validation error, a key limit, an unknown model …; see
   * {@link isRefusal}). Counted apart from `errors` in the rollups when written.
   */
  refused: number;
  cancelled: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  cached_tokens: number;
  /** Exact USD decimal string. */
  cost: string;
  latency_ms: Percentiles | null;
  ttft_ms: Percentiles | null;
}

export interface UsageRow extends UsageStats {
  /** ISO start of the bucket (UTC). */
  bucket: string;
  /** The group's value; null for no group, or for the admin key / no provider. */
  group: string | null;
}

/** The `GET /v1/usage` response body. */
export interface UsageResult {
  data: UsageRow[];
  totals: UsageStats;
  from: string;
  to: string;
  bucket: UsageBucket;
  group_by: UsageGroupBy;
}

/**
 * Percentiles from a latency histogram over {@link LATENCY_BUCKETS_MS} (counts; the last bucket
 * is open-ended). The value is interpolated linearly inside the bucket holding the rank, so it
 * is exact only to the bucket bounds (0–10 ms, 10–25 ms, …); a rank in the open bucket reports
 * its lower bound (120000). Null when the histogram is empty. Values are rounded to whole ms.
 */
export function histogramPercentiles(hist: readonly number[]): Percentiles | null {
  const total = hist.reduce((s, n) => s + n, 0);
  if (total === 0) return null;
  const at = (p: number): number => {
    const rank = p * total;
    let below = 0;
    for (let i = 0; i < hist.length; i++) {
      const n = hist[i]!;
      if (n > 0 && below + n >= rank) {
        const lo = i === 0 ? 0 : LATENCY_BUCKETS_MS[i - 1]!;
        const hi = i < LATENCY_BUCKETS_MS.length ? LATENCY_BUCKETS_MS[i]! : lo;
        return Math.round(lo + ((hi - lo) * (rank - below)) / n);
      }
      below += n;
    }
    return LATENCY_BUCKETS_MS[LATENCY_BUCKETS_MS.length - 1]!;
  };
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99) };
}

/** Running sums of one bucket/group. */
class Acc {
  requests = 0;
  errors = 0;
  refused = 0;
  cancelled = 0;
  prompt_tokens = 0;
  completion_tokens = 0;
  reasoning_tokens = 0;
  cached_tokens = 0;
  cost = 0n;
  readonly latency = new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);
  readonly ttft = new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);

  constructor(readonly bucket = 0, readonly group: string | null = null) {}

  addRollup(r: RollupRead): void {
    this.requests += Number(r.requests);
    this.errors += Number(r.errors);
    this.refused += Number(r.refused);
    this.cancelled += Number(r.cancelled);
    this.prompt_tokens += Number(r.prompt_tokens);
    this.completion_tokens += Number(r.completion_tokens);
    this.reasoning_tokens += Number(r.reasoning_tokens);
    this.cached_tokens += Number(r.cached_tokens);
    this.cost += BigInt(r.cost ?? 0);
    addHist(this.latency, r.latency_hist);
    addHist(this.ttft, r.ttft_hist);
  }

  /** Add another accumulator's sums (totals from the groups, without reading the histograms twice). */
  addAcc(a: Acc): void {
    this.requests += a.requests;
    this.errors += a.errors;
    this.refused += a.refused;
    this.cancelled += a.cancelled;
    this.prompt_tokens += a.prompt_tokens;
    this.completion_tokens += a.completion_tokens;
    this.reasoning_tokens += a.reasoning_tokens;
    this.cached_tokens += a.cached_tokens;
    this.cost += a.cost;
    for (let i = 0; i < this.latency.length; i++) {
      this.latency[i]! += a.latency[i]!;
      this.ttft[i]! += a.ttft[i]!;
    }
  }

  addGeneration(g: SessionRead): void {
    this.requests++;
    if (isRefusal(g)) this.refused++;
    else if (g.status === 'error') this.errors++;
    if (g.status === 'cancelled') this.cancelled++;
    this.prompt_tokens += Number(g.prompt_tokens ?? 0);
    this.completion_tokens += Number(g.completion_tokens ?? 0);
    this.reasoning_tokens += Number(g.reasoning_tokens ?? 0);
    this.cached_tokens += Number(g.cached_tokens ?? 0);
    this.cost += BigInt(g.cost);
    this.latency[latencyBucket(Number(g.latency_ms))]!++;
    if (g.ttft_ms !== null) this.ttft[latencyBucket(Number(g.ttft_ms))]!++;
  }

  stats(): UsageStats {
    return {
      requests: this.requests,
      errors: this.errors,
      refused: this.refused,
      cancelled: this.cancelled,
      prompt_tokens: this.prompt_tokens,
      completion_tokens: this.completion_tokens,
      reasoning_tokens: this.reasoning_tokens,
      cached_tokens: this.cached_tokens,
      cost: picoToUsdString(this.cost),
      latency_ms: histogramPercentiles(this.latency),
      ttft_ms: histogramPercentiles(this.ttft),
    };
  }
}

/**
 * Add JSON histograms (`[n0,n1,…]`, one or several concatenated) into `into`, without building
 * intermediate arrays.
 */
function addHist(into: number[], json: string): void {
  let i = 0;
  let n = 0;
  let digits = false;
  for (let p = 0; p < json.length; p++) {
    const c = json.charCodeAt(p);
    if (c >= 48 && c <= 57) {
      n = n * 10 + (c - 48);
      digits = true;
    } else if (c === 91) {
      // '[': the next histogram
      i = 0;
      n = 0;
      digits = false;
    } else if (c === 44 || c === 93) {
      // ',' or ']'
      if (digits && i < into.length) into[i]! += n;
      i++;
      n = 0;
      digits = false;
    }
  }
}

/** One aggregated (bucket, group) row of a rollup read. */
interface RollupRead {
  b: number | string;
  grp: string | null;
  requests: number | string;
  errors: number | string;
  refused: number | string;
  cancelled: number | string;
  prompt_tokens: number | string;
  completion_tokens: number | string;
  reasoning_tokens: number | string;
  cached_tokens: number | string;
  cost: string | number;
  /** The group's JSON histograms, concatenated (`[…][…]…`). */
  latency_hist: string;
  ttft_hist: string;
}

type SessionRead = Pick<GenerationsTable, 'status' | 'error_code' | 'provider' | 'prompt_tokens' | 'completion_tokens' | 'reasoning_tokens' | 'cached_tokens' | 'latency_ms' | 'ttft_ms'> & {
  session: string | null;
  created_at: number | string;
  cost: string;
};

const GROUP_COLUMN = { model: 'model', provider: 'provider', key: 'key_id', tag: 'tag' } as const;

/** The part of one UTC day (starting at `day`) in a range: [from, to). */
export interface PartialDay {
  day: number;
  from: number;
  to: number;
}

/**
 * How a range is read: its whole UTC days from the daily tables, the partial days at its edges
 * (at most two, under two days in all; `from`/`to` hour-aligned) from the hourly ones.
 */
export function splitByDay(from: number, to: number): { days: [number, number] | null; partial: PartialDay[] } {
  const first = Math.ceil(from / DAY_MS) * DAY_MS;
  const last = Math.floor(to / DAY_MS) * DAY_MS;
  const partial: PartialDay[] = [];
  if (first > last) return { days: null, partial: [{ day: last, from, to }] }; // inside one day
  if (from < first) partial.push({ day: first - DAY_MS, from, to: first });
  if (last < to) partial.push({ day: last, from: last, to });
  return { days: first < last ? [first, last] : null, partial };
}

/**
 * A rollup table in [q.from, q.to) with the query's filters, aggregated in the database by
 * bucket (hour, or UTC day: `hour - hour % 86400000` in the hourly tables, `day` in the daily
 * ones; none with `bucketed: false`) and by the group column (if any). The range must be aligned
 * to the table's period (see {@link queryUsage} and {@link splitByDay}).
 */
export function rollupQuery(db: Kysely<Database>, q: UsageQuery, table: RollupTable, groupCol: string | null, withTagFilter: boolean, bucketed = true) {
  const time = ROLLUP_TIME_COLUMN[table];
  if (bucketed && time === 'day' && q.bucket === 'hour') throw new Error('hour buckets need the hourly rollups');
  const bucket = !bucketed ? null : time === 'day' ? sql<number>`day` : q.bucket === 'day' ? sql<number>`hour - (hour % ${sql.lit(DAY_MS)})` : sql<number>`hour`;
  let qb = db
    .selectFrom(table as 'usage_hourly')
    .select((eb) => [
      (bucket ?? sql<number>`0`).as('b'),
      (groupCol ? sql<string | null>`${sql.ref(groupCol)}` : sql<string | null>`null`).as('grp'),
      eb.fn.sum<number>('requests').as('requests'),
      eb.fn.sum<number>('errors').as('errors'),
      eb.fn.sum<number>('refused').as('refused'),
      eb.fn.sum<number>('cancelled').as('cancelled'),
      eb.fn.sum<number>('prompt_tokens').as('prompt_tokens'),
      eb.fn.sum<number>('completion_tokens').as('completion_tokens'),
      eb.fn.sum<number>('reasoning_tokens').as('reasoning_tokens'),
      eb.fn.sum<number>('cached_tokens').as('cached_tokens'),
      // Exact whatever its size: the bigint sum read as text (CAST … AS TEXT: SQLite and PostgreSQL).
      sql<string>`cast(sum(cost_pico) as text)`.as('cost'),
      sqlDialectOf(db).concatAgg('latency_hist').as('latency_hist'),
      sqlDialectOf(db).concatAgg('ttft_hist').as('ttft_hist'),
    ])
    .where(sql.ref(time), '>=', q.from)
    .where(sql.ref(time), '<', q.to);
  // The rollups count the admin key's requests under key_id ''.
  if (q.keyId !== undefined) qb = qb.where('key_id', '=', q.keyId ?? '');
  if (q.teamId !== undefined) qb = qb.where('key_id', 'in', teamKeys(db, q.teamId));
  if (q.model !== undefined) qb = qb.where('model', '=', q.model);
  if (q.provider !== undefined) qb = qb.where('provider', '=', q.provider);
  if (withTagFilter && q.tag !== undefined) qb = qb.where(sql.ref('tag'), '=', q.tag);
  const groupBy = [...(bucket ? [bucket] : []), ...(groupCol ? [sql.ref(groupCol)] : [])];
  return groupBy.length > 0 ? qb.groupBy(groupBy) : qb;
}

/**
 * Read [q.from, q.to) from the rollups: with `daily`, whole days from the daily table and the
 * partial days at the edges from the hourly one; otherwise every hour from the hourly table.
 */
async function readRollups(db: Kysely<Database>, q: UsageQuery, tagged: boolean, groupCol: string | null, withTagFilter: boolean, opts: { daily: boolean; bucketed: boolean }): Promise<RollupRead[]> {
  const hourly: RollupTable = tagged ? 'usage_hourly_tags' : 'usage_hourly';
  const parts: [RollupTable, number, number][] = [];
  if (opts.daily) {
    const { days, partial } = splitByDay(q.from, q.to);
    if (days) parts.push([tagged ? 'usage_daily_tags' : 'usage_daily', ...days]);
    for (const p of partial) parts.push([hourly, p.from, p.to]);
  } else {
    parts.push([hourly, q.from, q.to]);
  }
  const out: RollupRead[] = [];
  for (const [table, from, to] of parts) {
    const rows = (await rollupQuery(db, { ...q, from, to }, table, groupCol, withTagFilter, opts.bucketed).execute()) as RollupRead[];
    // Without a GROUP BY an empty range still yields one row, of NULLs.
    for (const r of rows) if (Number(r.requests ?? 0) > 0) out.push(r);
  }
  return out;
}

/** The totals of [q.from, q.to): whole days from the daily rollups, the edges from the hourly ones. */
async function readTotals(db: Kysely<Database>, q: UsageQuery, tagged: boolean, withTagFilter: boolean): Promise<Acc> {
  const totals = new Acc();
  for (const r of await readRollups(db, q, tagged, null, withTagFilter, { daily: true, bucketed: false })) totals.addRollup(r);
  return totals;
}

const bucketStart = (ms: number, bucket: UsageBucket): number => {
  const size = bucket === 'day' ? DAY_MS : bucket === 'minute' ? MINUTE_MS : HOUR_MS;
  return Math.floor(ms / size) * size;
};

/**
 * Generation filters of the session queries. `top` (counting the sessions of a partial day)
 * writes each in a form an index can serve: the model as in the rollups (served, else
 * requested) as an OR over the two model indexes, the tag as a list from generation_tags.
 * `details` (the rows of the chosen sessions) writes them so that none can serve, leaving the
 * (session, created_at) index to drive.
 */
function sessionFilters(q: UsageQuery, mode: 'top' | 'details', db?: Kysely<Database>) {
  return (eb: ExpressionBuilder<Database, 'generations'>): Expression<SqlBool> => {
    const conds: Expression<SqlBool>[] = [eb('created_at', '>=', q.from), eb('created_at', '<', q.to)];
    const top = mode === 'top';
    if (q.keyId !== undefined) {
      if (top) conds.push(q.keyId === null ? eb('key_id', 'is', null) : eb('key_id', '=', q.keyId));
      else conds.push(eb(eb.fn.coalesce('key_id', sql.lit('')), '=', q.keyId ?? ''));
    }
    if (q.teamId !== undefined && db) conds.push(eb('key_id', 'in', teamKeys(db, q.teamId)));
    if (q.model !== undefined) {
      if (top) conds.push(eb.or([eb('served_model', '=', q.model), eb.and([eb('served_model', 'is', null), eb('requested_model', '=', q.model)])]));
      else conds.push(eb(eb.fn.coalesce('served_model', 'requested_model'), '=', q.model));
    }
    if (q.provider !== undefined) {
      // As in the rollups, provider '' is a generation no provider answered.
      if (top) conds.push(q.provider === '' ? eb('provider', 'is', null) : eb('provider', '=', q.provider));
      else conds.push(eb(eb.fn.coalesce('provider', sql.lit('')), '=', q.provider));
    }
    if (q.tag !== undefined) {
      const tagged = eb.selectFrom('generation_tags').where('generation_tags.tag', '=', q.tag);
      conds.push(
        top
          ? eb('id', 'in', tagged.select('generation_tags.generation_id').where('generation_tags.created_at', '>=', q.from).where('generation_tags.created_at', '<', q.to))
          : eb.exists(tagged.select(sql<number>`1`.as('one')).whereRef('generation_tags.generation_id', '=', 'generations.id')),
      );
    }
    return eb.and(conds);
  };
}

/**
 * The session-count table that can answer a query's filters: per (day, key, session) without a
 * model, provider or tag filter; by model and provider with one; per tag as well with a tag.
 */
export function sessionCountTable(q: UsageQuery): 'usage_daily_sessions' | 'usage_daily_session_models' | 'usage_daily_session_tags' {
  if (q.tag !== undefined) return 'usage_daily_session_tags';
  if (q.model !== undefined || q.provider !== undefined) return 'usage_daily_session_models';
  return 'usage_daily_sessions';
}

/**
 * The query finding the top sessions by requests in the range, in one statement (one snapshot):
 * the whole days from the daily session counts ({@link sessionCountTable}, read by day range);
 * each partial day at an edge from the same counts when nothing was recorded in the rest of that
 * day (the usual last day of a range ending now), else from `generations` through the time index
 * or the filter's index; the counts added per session. Exact: the counts are keyed by every usage
 * filter.
 */
export function topSessionsQuery(db: Kysely<Database>, q: UsageQuery) {
  const { days, partial } = splitByDay(q.from, q.to);
  const counts = (from: number, to: number) => {
    let c = db
      .selectFrom(sessionCountTable(q) as 'usage_daily_session_tags')
      .select([sql<string>`session`.as('session'), sql<number>`requests`.as('n')])
      .where('day', '>=', from)
      .where('day', '<', to);
    if (q.keyId !== undefined) c = c.where('key_id', '=', q.keyId ?? '');
    if (q.teamId !== undefined) c = c.where('key_id', 'in', teamKeys(db, q.teamId));
    if (q.model !== undefined) c = c.where('model', '=', q.model);
    if (q.provider !== undefined) c = c.where('provider', '=', q.provider);
    if (q.tag !== undefined) c = c.where('tag', '=', q.tag);
    return c;
  };
  const parts = [];
  if (days) parts.push(counts(days[0], days[1]));
  for (const p of partial) {
    // Anything recorded in the rest of the partial day (before `from` or from `to` on)?
    const rest = [
      [p.day, p.from],
      [p.to, p.day + DAY_MS],
    ].filter(([a, b]) => a! < b!);
    const busy = (eb: ExpressionBuilder<Database, 'generations' | 'usage_daily_session_tags'>) =>
      eb.or(rest.map(([a, b]) => eb.exists(db.selectFrom('generations as r').select(sql<number>`1`.as('one')).where('r.created_at', '>=', a!).where('r.created_at', '<', b!))));
    parts.push(counts(p.day, p.day + DAY_MS).where((eb) => eb.not(busy(eb))));
    parts.push(
      db
        .selectFrom('generations')
        .select([sql<string>`session`.as('session'), sql<number>`1`.as('n')])
        .where('session', 'is not', null)
        .where(sessionFilters({ ...q, from: p.from, to: p.to }, 'top', db))
        .where((eb) => busy(eb)),
    );
  }
  const all = parts.slice(1).reduce((u, p) => u.unionAll(p as never), parts[0]!);
  return db
    .selectFrom(all.as('u'))
    .select(['u.session', (eb) => eb.fn.sum<number | string>('u.n').as('n')])
    .groupBy('u.session')
    .orderBy('n', 'desc')
    .orderBy('u.session')
    .limit(TOP_SESSIONS);
}

/** The generations of the given sessions in the range (read through the (session, created_at) index). */
export function sessionRowsQuery(db: Kysely<Database>, q: UsageQuery, sessions: string[]) {
  return db
    .selectFrom('generations')
    .select(['session', 'created_at', 'status', 'error_code', 'provider', 'prompt_tokens', 'completion_tokens', 'reasoning_tokens', 'cached_tokens', 'latency_ms', 'ttft_ms'])
    .select(sql<string>`cast(cost_pico as text)`.as('cost'))
    .where('session', 'in', sessions)
    .where(sessionFilters(q, 'details', db));
}

/** `group_by: session`: the top sessions by requests in the range, their figures from `generations`. */
async function sessionRows(db: Kysely<Database>, q: UsageQuery): Promise<Acc[]> {
  const top = await topSessionsQuery(db, q).execute();
  if (top.length === 0) return [];
  const rows = (await sessionRowsQuery(
    db,
    q,
    top.map((t) => t.session),
  ).execute()) as SessionRead[];
  const groups = new Map<string, Acc>();
  for (const r of rows) {
    const b = bucketStart(Number(r.created_at), q.bucket);
    const id = `${b}\u0000${r.session}`;
    let a = groups.get(id);
    if (!a) groups.set(id, (a = new Acc(b, r.session)));
    a.addGeneration(r);
  }
  return [...groups.values()];
}

/**
 * Minute buckets: the range's generations (at most {@link USAGE_MAX_RANGE_DAYS}.minute long)
 * read through the time index (or a filter's) and summed per (minute, group). A generation
 * with several tags is in each of its tags' groups and once in the totals, as with the rollups.
 * `group_by: user` (no rollup has the end user) is read the same way for any bucket size.
 */
async function minuteRows(db: Kysely<Database>, q: UsageQuery): Promise<{ groups: Acc[]; totals: Acc }> {
  const rows = (await db
    .selectFrom('generations')
    .select(['session', 'created_at', 'status', 'error_code', 'provider', 'prompt_tokens', 'completion_tokens', 'reasoning_tokens', 'cached_tokens', 'latency_ms', 'ttft_ms', 'served_model', 'requested_model', 'key_id', 'tags', 'end_user'])
    .select(sql<string>`cast(cost_pico as text)`.as('cost'))
    .where(sessionFilters(q, 'top', db))
    .execute()) as (SessionRead & { served_model: string | null; requested_model: string; key_id: string | null; tags: string; end_user: string | null })[];
  const groups = new Map<string, Acc>();
  const totals = new Acc();
  for (const r of rows) {
    const b = bucketStart(Number(r.created_at), q.bucket);
    let names: (string | null)[];
    switch (q.groupBy) {
      case 'model':
        names = [r.served_model ?? r.requested_model];
        break;
      case 'provider':
        names = [r.provider];
        break;
      case 'key':
        names = [r.key_id];
        break;
      case 'user':
        names = [r.end_user];
        break;
      case 'session':
        names = r.session === null ? [] : [r.session];
        break;
      case 'tag': {
        const tags = JSON.parse(r.tags) as string[];
        names = q.tag !== undefined ? [q.tag] : tags.length ? tags : [null];
        break;
      }
      default:
        names = [null];
    }
    for (const g of names) {
      const id = `${b}\u0000${g ?? ''}`;
      let a = groups.get(id);
      if (!a) groups.set(id, (a = new Acc(b, g)));
      a.addGeneration(r);
    }
    totals.addGeneration(r);
  }
  return { groups: [...groups.values()], totals };
}

/**
 * Usage aggregates from the rollups (never a scan of `generations`: `group_by: session` reads
 * the daily session counts, the partial days at the edges through an index, and the chosen
 * sessions' rows).
 *
 * `from` is rounded down to the start of its bucket (minute, hour, or UTC day) and `to` up to
 * the next hour (minute for minute buckets), because rollups are hourly; the response carries the range actually counted. Day
 * buckets, and the totals of any query, read whole days from the daily rollups and the partial
 * days at the edges from the hourly ones; hour buckets read the hourly rollups. Buckets with no
 * traffic are absent. `totals` counts every generation that matches the filters once (with
 * `group_by: tag` a generation with two tags is in two groups but once in the totals; with
 * `group_by: session` the totals include generations outside the top sessions).
 * @throws GatewayError invalid_request (param `from`) for a range longer than {@link USAGE_MAX_RANGE_DAYS}.
 */
export async function queryUsage(db: Kysely<Database>, query: UsageQuery): Promise<UsageResult> {
  if (query.groupBy === 'team') return byTeam(db, await queryUsage(db, { ...query, groupBy: 'key' }), query);
  const maxDays = USAGE_MAX_RANGE_DAYS[query.bucket];
  if (query.to - query.from > maxDays * DAY_MS) {
    const hint = query.bucket === 'hour' ? `; use bucket=day for longer ranges (up to ${USAGE_MAX_RANGE_DAYS.day} days)` : '';
    throw new GatewayError('invalid_request', `from: the range is longer than ${maxDays} days, the most for bucket=${query.bucket}${hint}`, { param: 'from' });
  }
  const unit = query.bucket === 'minute' ? MINUTE_MS : HOUR_MS;
  const q: UsageQuery = { ...query, from: bucketStart(query.from, query.bucket), to: Math.ceil(query.to / unit) * unit };
  const tagged = q.tag !== undefined || q.groupBy === 'tag';
  let groups: Acc[];
  let totals: Acc;
  if (q.bucket === 'minute' || q.groupBy === 'user') {
    ({ groups, totals } = await minuteRows(db, q));
  } else if (q.groupBy === 'session') {
    groups = await sessionRows(db, q);
    totals = await readTotals(db, q, tagged, true);
  } else {
    const groupCol = q.groupBy === null ? null : GROUP_COLUMN[q.groupBy as keyof typeof GROUP_COLUMN];
    const map = new Map<string, Acc>();
    for (const r of await readRollups(db, q, tagged, groupCol, true, { daily: q.bucket === 'day', bucketed: true })) {
      const b = Number(r.b);
      const g = r.grp === '' ? null : r.grp;
      const id = `${b}\u0000${g ?? ''}`;
      let a = map.get(id);
      if (!a) map.set(id, (a = new Acc(b, g)));
      a.addRollup(r);
    }
    groups = [...map.values()];
    if (q.groupBy === 'tag' && q.tag === undefined) {
      // Counted once per generation, not once per tag.
      totals = await readTotals(db, q, false, false);
    } else {
      // Every rollup row read is in exactly one group.
      totals = new Acc();
      for (const a of groups) totals.addAcc(a);
    }
  }
  groups.sort((a, b) => a.bucket - b.bucket || (a.group === b.group ? 0 : a.group === null ? -1 : b.group === null ? 1 : a.group < b.group ? -1 : 1));
  return {
    data: groups.map((a) => ({ bucket: new Date(a.bucket).toISOString(), group: a.group, ...a.stats() })),
    totals: totals.stats(),
    from: new Date(q.from).toISOString(),
    to: new Date(q.to).toISOString(),
    bucket: q.bucket,
    group_by: q.groupBy,
  };
}

/**
 * `group_by: team`: a query's key groups folded into the teams their keys belong to now (keys
 * without a team, and the admin key, in the group null). Sums add; latency percentiles of a
 * team of several keys are not kept (null: the histograms are gone once a group's figures are
 * made), those of a team of one key are its key's.
 */
async function byTeam(db: Kysely<Database>, byKey: UsageResult, query: UsageQuery): Promise<UsageResult> {
  const teamOf = new Map<string, string>();
  for (const r of await db.selectFrom('api_keys').select(['id', 'team_id']).where('team_id', 'is not', null).execute()) teamOf.set(r.id, r.team_id!);
  const rows = new Map<string, UsageRow & { keys: number }>();
  for (const r of byKey.data) {
    const team = r.group === null ? null : (teamOf.get(r.group) ?? null);
    const id = `${r.bucket}\u0000${team ?? ''}`;
    const into = rows.get(id);
    if (!into) {
      rows.set(id, { ...r, group: team, keys: 1 });
      continue;
    }
    for (const f of ['requests', 'errors', 'refused', 'cancelled', 'prompt_tokens', 'completion_tokens', 'reasoning_tokens', 'cached_tokens'] as const) into[f] += r[f];
    into.cost = picoToUsdString(usdStringToPico(into.cost) + usdStringToPico(r.cost));
    into.keys++;
    into.latency_ms = null;
    into.ttft_ms = null;
  }
  const data = [...rows.values()]
    .map(({ keys: _keys, ...row }) => row)
    .sort((a, b) => (a.bucket < b.bucket ? -1 : a.bucket > b.bucket ? 1 : a.group === b.group ? 0 : a.group === null ? -1 : b.group === null ? 1 : a.group < b.group ? -1 : 1));
  return { ...byKey, data, group_by: query.groupBy };
}

/** An exact USD decimal string (as {@link picoToUsdString} writes it) → picodollars. */
function usdStringToPico(usd: string): bigint {
  const neg = usd.startsWith('-');
  const [whole, frac = ''] = (neg ? usd.slice(1) : usd).split('.');
  const pico = BigInt(whole!) * 1_000_000_000_000n + BigInt((frac + '000000000000').slice(0, 12));
  return neg ? -pico : pico;
}

/**
 * The cost a key spent since `periodStart`, in picodollars: the sum of `cost_pico` over the
 * key's `usage_hourly` rows from that hour on (0n when there are none). `periodStart` is unix ms
 * of an hour's start (UTC), the start of the key's limit period (limits/limit-store.ts
 * `periodStart`: a UTC day, Monday or month, or 0 for `never`). The sum is cast to text in SQL,
 * so no driver hands it back as a rounded JS number. The runtime's `loadSpent`
 * (server/build-runtime.ts).
 * @throws GatewayError `database_unavailable` while the database is down (else the error as a
 *   GatewayError, see `gatewayErrorOf`), so the Redis limit store does not take it for its own failure.
 */
export async function loadSpentSince(db: Kysely<Database>, keyId: string, periodStart: number): Promise<bigint> {
  const row = await db
    .selectFrom('usage_hourly')
    .select(sql<string | null>`CAST(SUM(cost_pico) AS TEXT)`.as('total'))
    .where('key_id', '=', keyId)
    .where('hour', '>=', periodStart)
    .executeTakeFirst()
    .catch((err: unknown) => {
      throw gatewayErrorOf(err);
    });
  return BigInt(row?.total ?? '0');
}
