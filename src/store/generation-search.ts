import { sql, type CompiledQuery, type Expression, type ExpressionBuilder, type Kysely, type SelectQueryBuilder, type SqlBool } from 'kysely';
import { REFUSAL_CODES } from './refusal.js';
import type { Database, GenerationTagsTable, GenerationsTable } from './schema.js';

/**
 * Generation statuses a search can filter on. `refused` and `error` split the stored status
 * `error` as the usage counters do ({@link isRefusal}): `refused` is the client's own problem
 * with no provider answering (invalid, over a limit, unknown model), `error` every other error.
 */
export const GENERATION_STATUSES = ['success', 'error', 'refused', 'cancelled'] as const;
export type GenerationStatus = (typeof GENERATION_STATUSES)[number];

/** Filters of a generation search. Times are unix ms; `from` inclusive, `to` exclusive. */
export interface SearchQuery {
  /** Served or requested model. */
  model?: string | undefined;
  provider?: string | undefined;
  status?: GenerationStatus | undefined;
  /** A key's id, or null for the admin key's own requests. */
  keyId?: string | null | undefined;
  /** Only these keys' generations (a signed-in team member's keys; non-empty). */
  keyIds?: readonly string[] | undefined;
  tag?: string | undefined;
  session?: string | undefined;
  from?: number | undefined;
  to?: number | undefined;
  /** 1–200. */
  limit: number;
  /** From the previous page's `next_cursor`. */
  cursor?: string | undefined;
}

/** A generation row without its stored text (search results never carry it). */
export type SearchRow = Omit<GenerationsTable, 'content'>;

/** One page of results, newest first. */
export interface SearchPage {
  rows: SearchRow[];
  /** Opaque; pass as `cursor` for the next page. Null on the last page. */
  next_cursor: string | null;
}

/** Position after the last row of a page: (created_at, id), newest first. */
export interface Cursor {
  createdAt: number;
  id: string;
}

/** Encode a cursor as an opaque URL-safe string. */
export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.createdAt, c.id]), 'utf8').toString('base64url');
}

/** Decode a cursor made by {@link encodeCursor}; null when it is not one. */
export function decodeCursor(text: string): Cursor | null {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(text)) return null;
  try {
    const v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string' && v[1].length > 0 && v[1].length <= 200) {
      return { createdAt: v[0] as number, id: v[1] };
    }
  } catch {
    // not JSON
  }
  return null;
}

const COLUMNS = [
  'id', 'request_id', 'created_at', 'key_id', 'requested_model', 'served_model', 'provider', 'endpoint', 'upstream_model', 'status', 'error_code',
  'error_message', 'http_status', 'finish_reason', 'native_finish_reason', 'api', 'streamed', 'cancelled', 'prompt_tokens', 'completion_tokens',
  'reasoning_tokens', 'cached_tokens', 'cache_write_tokens', 'usage_source', 'cost_pico', 'latency_ms', 'ttft_ms', 'tags', 'session', 'end_user', 'retention', 'detail',
] as const satisfies readonly (keyof SearchRow)[];

/**
 * The index a search walks, newest first. Every generations index is `(column, created_at)`,
 * so any one of them gives the rows of one filter value already in time order and a page is a
 * short walk that stops after `limit` matches. The walk is long only when the driving filter
 * matches many rows and the others few, so the driver is the filter with the fewest rows in
 * the time window (counted by a capped probe of each candidate index), and the other filters
 * are written so that no index is used for them (SQLite would otherwise pick one by guess).
 */
type Driver = 'session' | 'status' | 'tag' | 'provider' | 'model' | 'key' | 'created';

/** Tie order when the probes cannot tell (every candidate at the cap): usual selectivity. */
const PRIORITY: readonly Exclude<Driver, 'created'>[] = ['session', 'status', 'tag', 'provider', 'model', 'key'];
/** Index entries a probe counts at most. */
const PROBE_CAP = 2_000;

type Joined = Database & { g: GenerationsTable; t: GenerationTagsTable };
type Eb = ExpressionBuilder<Joined, 'g' | 't'>;

/**
 * `coalesce(col, '') = value`: the same test as `col = value` for a non-empty value (and as
 * `col is null` for ''), but no index serves it.
 */
function unindexed(eb: Eb, col: string, value: string): Expression<SqlBool> {
  return eb(sql<string>`coalesce(${sql.ref(col)}, '')`, '=', value);
}

function candidates(q: SearchQuery): Driver[] {
  const c: Driver[] = [];
  if (q.session !== undefined) c.push('session');
  if (q.status !== undefined) c.push('status');
  if (q.tag !== undefined) c.push('tag');
  if (q.provider !== undefined) c.push('provider');
  if (q.model !== undefined) c.push('model');
  if (q.keyId !== undefined) c.push('key');
  return c;
}

/** The column (in generations, or generation_tags for `tag`) a driver's index starts with. */
function driverColumn(d: Exclude<Driver, 'created' | 'model'>): string {
  return { session: 'session', status: 'status', tag: 'tag', provider: 'provider', key: 'key_id' }[d];
}

function driverValue(q: SearchQuery, d: Exclude<Driver, 'created' | 'model'>): string | null {
  // `refused` rows are stored as `error` (the status index holds them there).
  return { session: q.session, status: q.status === 'refused' ? 'error' : q.status, tag: q.tag, provider: q.provider, key: q.keyId }[d]!;
}

/** `col = value`, or `col is null` for a null value (the admin key's rows). */
function equals(eb: Eb, col: string, value: string | null): Expression<SqlBool> {
  return value === null ? eb(sql.ref(col), 'is', null) : eb(sql.ref(col), '=', value);
}

/** How many rows (capped) the driver's index holds for the filter value in the window. */
async function probe(db: Kysely<Database>, q: SearchQuery, d: Exclude<Driver, 'created'>, cursor: Cursor | null): Promise<number> {
  const count = async (table: 'generations' | 'generation_tags', col: string, value: string | null) => {
    let sub = db
      .selectFrom(table)
      .select(sql<number>`1`.as('one'))
      .where((eb) => equals(eb as unknown as Eb, col, value));
    if (q.from !== undefined) sub = sub.where('created_at', '>=', q.from);
    if (q.to !== undefined) sub = sub.where('created_at', '<', q.to);
    if (cursor) sub = sub.where('created_at', '<=', cursor.createdAt);
    const r = await db
      .selectFrom(sub.limit(PROBE_CAP).as('p'))
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  };
  if (d === 'model') return Math.min(PROBE_CAP, (await count('generations', 'served_model', q.model!)) + (await count('generations', 'requested_model', q.model!)));
  if (d === 'tag') return count('generation_tags', 'tag', q.tag!);
  return count('generations', driverColumn(d), driverValue(q, d));
}

async function chooseDriver(db: Kysely<Database>, q: SearchQuery, cursor: Cursor | null): Promise<Driver> {
  const c = candidates(q);
  if (c.length === 0) return 'created';
  if (c.length === 1) return c[0]!;
  let best = c[0]!;
  let bestN = Infinity;
  for (const d of PRIORITY) {
    if (!c.includes(d)) continue;
    const n = await probe(db, q, d, cursor);
    if (n < bestN) {
      best = d;
      bestN = n;
    }
    if (n === 0) break;
  }
  return best;
}

/**
 * The page query for one driver. `modelColumn` picks which model column drives when the
 * driver is `model` (the served and requested walks are merged by the caller).
 */
function pageQuery(db: Kysely<Database>, q: SearchQuery, cursor: Cursor | null, driver: Driver, modelColumn: 'served_model' | 'requested_model' = 'served_model') {
  const viaTag = driver === 'tag';
  // Time and order come from the driving index's table.
  const timeCol = viaTag ? 't.created_at' : 'g.created_at';
  const idCol = viaTag ? 't.generation_id' : 'g.id';
  let qb = (
    viaTag
      ? db.selectFrom('generation_tags as t').innerJoin('generations as g', 'g.id', 't.generation_id').where('t.tag', '=', q.tag!)
      : db.selectFrom('generations as g')
  ) as unknown as SelectQueryBuilder<Joined, 'g' | 't', object>;
  qb = qb.where((eb) => {
    const conds: Expression<SqlBool>[] = [];
    const on = (d: Driver, col: string, value: string | undefined) => {
      if (value === undefined) return;
      conds.push(driver === d ? eb(sql.ref(col), '=', value) : unindexed(eb, col, value));
    };
    on('session', 'g.session', q.session);
    on('status', 'g.status', q.status === 'refused' ? 'error' : q.status);
    if (q.status === 'error' || q.status === 'refused') {
      // The refusal test of isRefusal (no provider, a refusal code); coalesce keeps NULL out of NOT.
      const refusal = eb.and([eb(sql.ref('g.provider'), 'is', null), eb(sql<string>`coalesce(${sql.ref('g.error_code')}, '')`, 'in', REFUSAL_CODES)]);
      conds.push(q.status === 'refused' ? refusal : eb.not(refusal));
    }
    on('provider', 'g.provider', q.provider);
    if (q.keyId !== undefined) {
      // generation_tags carries the key too, so a tag walk skips other keys' rows without a join.
      if (viaTag) conds.push(equals(eb, 't.key_id', q.keyId));
      else if (driver === 'key') conds.push(equals(eb, 'g.key_id', q.keyId));
      else conds.push(unindexed(eb, 'g.key_id', q.keyId ?? ''));
    }
    if (q.keyIds !== undefined) conds.push(eb(sql.ref(viaTag ? 't.key_id' : 'g.key_id'), 'in', [...q.keyIds]));
    if (q.model !== undefined) {
      conds.push(driver === 'model' ? eb(sql.ref(`g.${modelColumn}`), '=', q.model) : eb.or([unindexed(eb, 'g.served_model', q.model), unindexed(eb, 'g.requested_model', q.model)]));
    }
    if (q.tag !== undefined && !viaTag) {
      conds.push(
        eb.exists(
          eb
            .selectFrom('generation_tags as t2')
            .select(sql<number>`1`.as('one'))
            .whereRef('t2.generation_id', '=', 'g.id')
            .where('t2.tag', '=', q.tag),
        ),
      );
    }
    if (q.from !== undefined) conds.push(eb(sql.ref(timeCol), '>=', q.from));
    if (q.to !== undefined) conds.push(eb(sql.ref(timeCol), '<', q.to));
    if (cursor) {
      // `<=` bounds the index range; the OR only breaks ties within one millisecond.
      conds.push(eb(sql.ref(timeCol), '<=', cursor.createdAt));
      conds.push(eb.or([eb(sql.ref(timeCol), '<', cursor.createdAt), eb(sql.ref(idCol), '<', cursor.id)]));
    }
    return eb.and(conds);
  });
  return qb
    .select(COLUMNS.map((c) => `g.${c}` as const) as never)
    .orderBy(sql.ref(timeCol), 'desc')
    .orderBy(sql.ref(idCol), 'desc')
    .limit(q.limit + 1);
}

function newestFirst(a: SearchRow, b: SearchRow): number {
  const d = Number(b.created_at) - Number(a.created_at);
  if (d !== 0) return d;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** The queries a search runs for its page (after the driver probes), for EXPLAIN. */
export async function searchPlanQueries(db: Kysely<Database>, q: SearchQuery): Promise<CompiledQuery[]> {
  const cursor = q.cursor === undefined ? null : decodeCursor(q.cursor);
  const driver = await chooseDriver(db, q, cursor);
  if (driver === 'model') return [pageQuery(db, q, cursor, driver, 'served_model').compile(), pageQuery(db, q, cursor, driver, 'requested_model').compile()];
  return [pageQuery(db, q, cursor, driver).compile()];
}

/**
 * One page of generations matching every given filter, newest first (created_at, then id).
 * Each page is an index walk; see {@link Driver}.
 * @throws RangeError when `cursor` is not one this function made.
 */
export async function searchGenerations(db: Kysely<Database>, q: SearchQuery): Promise<SearchPage> {
  const cursor = q.cursor === undefined ? null : decodeCursor(q.cursor);
  if (q.cursor !== undefined && !cursor) throw new RangeError('invalid cursor');
  const driver = await chooseDriver(db, q, cursor);
  let rows: SearchRow[];
  if (driver === 'model') {
    // Served or requested: two index walks, merged.
    const [a, b] = await Promise.all([
      pageQuery(db, q, cursor, driver, 'served_model').execute(),
      pageQuery(db, q, cursor, driver, 'requested_model').execute(),
    ]);
    const seen = new Set<string>();
    rows = [...(a as SearchRow[]), ...(b as SearchRow[])].sort(newestFirst).filter((r) => !seen.has(r.id) && seen.add(r.id));
  } else {
    rows = (await pageQuery(db, q, cursor, driver).execute()) as SearchRow[];
  }
  const more = rows.length > q.limit;
  const page = rows.slice(0, q.limit);
  const last = page.at(-1);
  return { rows: page, next_cursor: more && last ? encodeCursor({ createdAt: Number(last.created_at), id: last.id }) : null };
}
