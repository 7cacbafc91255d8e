import { PostgresAdapter, sql, type Expression, type ExpressionBuilder, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import { picoToUsdString } from '../accounting/cost.js';
import { LATENCY_BUCKETS_MS, type Database, type GenerationsTable } from './schema.js';
import { latencyBucket } from './usage-rollup.js';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

export const USAGE_BUCKETS = ['hour', 'day'] as const;
export type UsageBucket = (typeof USAGE_BUCKETS)[number];
export const USAGE_GROUPS = ['model', 'provider', 'key', 'tag', 'session'] as const;
export type UsageGroupBy = (typeof USAGE_GROUPS)[number] | null;

/** Sessions returned at most by `group_by: session` (the most requests first). */
export const TOP_SESSIONS = 100;

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
}

/** p50/p90/p99 in ms, approximate to the histogram bucket bounds. */
export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
}

/** The aggregates of one bucket/group, or of the whole range. */
export interface UsageStats {
  requests: number;
  errors: number;
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
    this.cancelled += Number(r.cancelled);
    this.prompt_tokens += Number(r.prompt_tokens);
    this.completion_tokens += Number(r.completion_tokens);
    this.reasoning_tokens += Number(r.reasoning_tokens);
    this.cached_tokens += Number(r.cached_tokens);
    this.cost += BigInt(r.cost ?? 0);
    addHist(this.latency, r.latency_hist);
    addHist(this.ttft, r.ttft_hist);
  }

  addGeneration(g: SessionRead): void {
    this.requests++;
    if (g.status === 'error') this.errors++;
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

type SessionRead = Pick<GenerationsTable, 'status' | 'prompt_tokens' | 'completion_tokens' | 'reasoning_tokens' | 'cached_tokens' | 'latency_ms' | 'ttft_ms'> & {
  session: string | null;
  created_at: number | string;
  cost: string;
};

const GROUP_COLUMN = { model: 'model', provider: 'provider', key: 'key_id', tag: 'tag' } as const;

/**
 * Concatenation of a group's strings: `group_concat` in SQLite, `string_agg` in PostgreSQL (the
 * one aggregate without a common spelling). Histograms are summed from the concatenation, so a
 * read returns one row per (bucket, group) instead of one per rollup row.
 */
function concatAgg(db: Kysely<Database>, col: 'latency_hist' | 'ttft_hist'): RawBuilder<string> {
  return db.getExecutor().adapter instanceof PostgresAdapter ? sql<string>`string_agg(${sql.ref(col)}, '')` : sql<string>`group_concat(${sql.ref(col)}, '')`;
}

/**
 * A rollup table in [from, to) with the query's filters, aggregated in the database by
 * bucket (hour, or UTC day: `hour - hour % 86400000`) and by the group column (if any).
 * `from`/`to` must already be aligned (see {@link queryUsage}).
 */
export function rollupQuery(db: Kysely<Database>, q: UsageQuery, table: 'usage_hourly' | 'usage_hourly_tags', groupCol: string | null, withTagFilter: boolean) {
  const bucket = q.bucket === 'day' ? sql<number>`hour - (hour % ${sql.lit(DAY_MS)})` : sql<number>`hour`;
  let qb = db
    .selectFrom(table as 'usage_hourly')
    .select((eb) => [
      bucket.as('b'),
      (groupCol ? sql<string | null>`${sql.ref(groupCol)}` : sql<string | null>`null`).as('grp'),
      eb.fn.sum<number>('requests').as('requests'),
      eb.fn.sum<number>('errors').as('errors'),
      eb.fn.sum<number>('cancelled').as('cancelled'),
      eb.fn.sum<number>('prompt_tokens').as('prompt_tokens'),
      eb.fn.sum<number>('completion_tokens').as('completion_tokens'),
      eb.fn.sum<number>('reasoning_tokens').as('reasoning_tokens'),
      eb.fn.sum<number>('cached_tokens').as('cached_tokens'),
      // Exact whatever its size: the bigint sum read as text (CAST … AS TEXT: SQLite and PostgreSQL).
      sql<string>`cast(sum(cost_pico) as text)`.as('cost'),
      concatAgg(db, 'latency_hist').as('latency_hist'),
      concatAgg(db, 'ttft_hist').as('ttft_hist'),
    ])
    .where('hour', '>=', q.from)
    .where('hour', '<', q.to);
  // The rollups count the admin key's requests under key_id ''.
  if (q.keyId !== undefined) qb = qb.where('key_id', '=', q.keyId ?? '');
  if (q.model !== undefined) qb = qb.where('model', '=', q.model);
  if (q.provider !== undefined) qb = qb.where('provider', '=', q.provider);
  if (withTagFilter && q.tag !== undefined) qb = qb.where(sql.ref('tag'), '=', q.tag);
  return groupCol ? qb.groupBy([bucket, sql.ref(groupCol)]) : qb.groupBy(bucket);
}

async function readRollups(db: Kysely<Database>, q: UsageQuery, table: 'usage_hourly' | 'usage_hourly_tags', groupCol: string | null, withTagFilter: boolean): Promise<RollupRead[]> {
  return (await rollupQuery(db, q, table, groupCol, withTagFilter).execute()) as RollupRead[];
}

const bucketStart = (ms: number, bucket: UsageBucket): number => {
  const size = bucket === 'day' ? DAY_MS : HOUR_MS;
  return Math.floor(ms / size) * size;
};

/** Ranges up to this long find the top sessions through the time index; longer ones through a session index. */
const SESSION_RANGE_SCAN_MS = 2 * DAY_MS;

/**
 * Generation filters of the session queries. `top` (finding the top sessions) writes each in a
 * form an index can serve: the model as in the rollups (served, else requested) as an OR over
 * the two model indexes, the tag as a list from generation_tags; with `timeIndexed: false` the
 * time bounds are written so that no index serves them (`created_at + 0`), which steers the
 * planner to a session index. `details` (the rows of the chosen sessions) writes them so that
 * none can serve, leaving the (session, created_at) index to drive.
 */
function sessionFilters(q: UsageQuery, mode: 'top' | 'details', timeIndexed = true) {
  return (eb: ExpressionBuilder<Database, 'generations'>): Expression<SqlBool> => {
    const created = timeIndexed ? eb.ref('created_at') : sql<number>`${sql.ref('created_at')} + 0`;
    const conds: Expression<SqlBool>[] = [eb(created, '>=', q.from), eb(created, '<', q.to)];
    const top = mode === 'top';
    if (q.keyId !== undefined) {
      if (top) conds.push(q.keyId === null ? eb('key_id', 'is', null) : eb('key_id', '=', q.keyId));
      else conds.push(eb(eb.fn.coalesce('key_id', sql.lit('')), '=', q.keyId ?? ''));
    }
    if (q.model !== undefined) {
      if (top) conds.push(eb.or([eb('served_model', '=', q.model), eb.and([eb('served_model', 'is', null), eb('requested_model', '=', q.model)])]));
      else conds.push(eb(eb.fn.coalesce('served_model', 'requested_model'), '=', q.model));
    }
    if (q.provider !== undefined) conds.push(top ? eb('provider', '=', q.provider) : eb(eb.fn.coalesce('provider', sql.lit('')), '=', q.provider));
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
 * The query finding the top sessions by requests in the range. With a key filter it reads the
 * covering index (key_id, session, created_at); with a model, provider or tag filter, the
 * matching rows of the range through that filter's index; with no filter, short ranges read the
 * time index and longer ones the (session, created_at) index, covering and already grouped.
 */
export function topSessionsQuery(db: Kysely<Database>, q: UsageQuery) {
  const filtered = q.keyId !== undefined || q.model !== undefined || q.provider !== undefined || q.tag !== undefined;
  const timeIndexed = filtered || q.to - q.from <= SESSION_RANGE_SCAN_MS;
  return db
    .selectFrom('generations')
    .select(['session', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('session', 'is not', null)
    .where(sessionFilters(q, 'top', timeIndexed))
    .groupBy('session')
    .orderBy('n', 'desc')
    .orderBy('session')
    .limit(TOP_SESSIONS);
}

/** The generations of the given sessions in the range (read through the (session, created_at) index). */
export function sessionRowsQuery(db: Kysely<Database>, q: UsageQuery, sessions: string[]) {
  return db
    .selectFrom('generations')
    .select(['session', 'created_at', 'status', 'prompt_tokens', 'completion_tokens', 'reasoning_tokens', 'cached_tokens', 'latency_ms', 'ttft_ms'])
    .select(sql<string>`cast(cost_pico as text)`.as('cost'))
    .where('session', 'in', sessions)
    .where(sessionFilters(q, 'details'));
}

/** `group_by: session`: the top sessions by requests in the range, from `generations`. */
async function sessionRows(db: Kysely<Database>, q: UsageQuery): Promise<Acc[]> {
  const top = await topSessionsQuery(db, q).execute();
  if (top.length === 0) return [];
  const rows = (await sessionRowsQuery(
    db,
    q,
    top.map((t) => t.session!),
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
 * Usage aggregates from the hourly rollups (never a scan of `generations`, except the bounded
 * top-sessions read of `group_by: session`).
 *
 * `from` is rounded down to the start of its bucket (hour, or UTC day) and `to` up to the next
 * hour, because rollups are hourly; the response carries the range actually counted. Buckets
 * with no traffic are absent. `totals` counts every generation that matches the filters once
 * (with `group_by: tag` a generation with two tags is in two groups but once in the totals;
 * with `group_by: session` the totals include generations outside the top sessions).
 */
export async function queryUsage(db: Kysely<Database>, query: UsageQuery): Promise<UsageResult> {
  const q: UsageQuery = { ...query, from: bucketStart(query.from, query.bucket), to: Math.ceil(query.to / HOUR_MS) * HOUR_MS };
  const tagTable = q.tag !== undefined || q.groupBy === 'tag';
  const table = tagTable ? 'usage_hourly_tags' : 'usage_hourly';
  let groups: Acc[];
  let totals = new Acc();
  if (q.groupBy === 'session') {
    groups = await sessionRows(db, q);
    for (const r of await readRollups(db, q, table, null, true)) totals.addRollup(r);
  } else {
    const groupCol = q.groupBy === null ? null : GROUP_COLUMN[q.groupBy];
    const map = new Map<string, Acc>();
    for (const r of await readRollups(db, q, table, groupCol, true)) {
      const b = Number(r.b);
      const g = r.grp === '' ? null : r.grp;
      const id = `${b}\u0000${g ?? ''}`;
      let a = map.get(id);
      if (!a) map.set(id, (a = new Acc(b, g)));
      a.addRollup(r);
      totals.addRollup(r);
    }
    groups = [...map.values()];
    if (q.groupBy === 'tag' && q.tag === undefined) {
      // Counted once per generation, not once per tag.
      totals = new Acc();
      for (const r of await readRollups(db, q, 'usage_hourly', null, false)) totals.addRollup(r);
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
