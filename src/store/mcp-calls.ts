import { sql, type Kysely, type SqlBool } from 'kysely';
import type { Database, McpToolCallsTable } from './schema.js';
import { decodeCursor, encodeCursor } from './generation-search.js';

/**
 * Reads of the MCP tool-call records (`mcp_tool_calls`, issue 22 item 4): `GET /v1/mcp/calls`
 * (newest first, cursor paged like `/v1/generations`), `GET /v1/mcp/calls/summary` (counts and
 * latency percentiles by server and tool), and the retention purge of their text.
 */

/** The values of `mcp_tool_calls.status`. */
export const MCP_CALL_STATUSES = ['ok', 'tool_error', 'error', 'refused'] as const;
export type McpCallStatus = (typeof MCP_CALL_STATUSES)[number];

/** Filters of both reads. Times are unix ms; `since` inclusive, `until` exclusive. */
export interface McpCallFilter {
  /** A key's id; null: the admin key's own calls; undefined: every key. */
  keyId?: string | null | undefined;
  server?: string | undefined;
  tool?: string | undefined;
  status?: McpCallStatus | undefined;
  since?: number | undefined;
  until?: number | undefined;
}

/** One page of {@link listMcpCalls}. */
export interface McpCallPage {
  rows: McpToolCallsTable[];
  /** Opaque; pass as `cursor` for the next page. Null on the last page. */
  next_cursor: string | null;
}

/** One group of {@link summarizeMcpCalls}. Latencies in ms. */
export interface McpCallSummaryRow {
  server: string;
  tool: string;
  /** Present when grouped by key: the key's id, `admin` for the admin key's calls. */
  key_id?: string;
  calls: number;
  ok: number;
  tool_errors: number;
  errors: number;
  refused: number;
  p50_latency_ms: number;
  p95_latency_ms: number;
}

/** Longest range a summary reads, in ms (31 days). */
export const MCP_SUMMARY_MAX_RANGE_MS = 31 * 86_400_000;

function filtered(db: Kysely<Database>, f: McpCallFilter) {
  let q = db.selectFrom('mcp_tool_calls');
  if (f.keyId === null) q = q.where('key_id', 'is', null);
  else if (f.keyId !== undefined) q = q.where('key_id', '=', f.keyId);
  if (f.server !== undefined) q = q.where('server', '=', f.server);
  if (f.tool !== undefined) q = q.where('tool', '=', f.tool);
  if (f.status !== undefined) q = q.where('status', '=', f.status);
  if (f.since !== undefined) q = q.where('created_at', '>=', f.since);
  if (f.until !== undefined) q = q.where('created_at', '<', f.until);
  return q;
}

/**
 * MCP call records matching the filter, newest first (`created_at`, then `id`), `limit` per page.
 * @throws RangeError when `cursor` is not a `next_cursor` of a previous page.
 */
export async function listMcpCalls(db: Kysely<Database>, f: McpCallFilter & { limit: number; cursor?: string | undefined }): Promise<McpCallPage> {
  const cursor = f.cursor === undefined ? null : decodeCursor(f.cursor);
  if (f.cursor !== undefined && cursor === null) throw new RangeError('not a cursor of this list');
  let q = filtered(db, f).selectAll();
  if (cursor) q = q.where((eb) => eb.and([eb('created_at', '<=', cursor.createdAt), eb.or([eb('created_at', '<', cursor.createdAt), eb('id', '<', cursor.id)])]));
  const rows = (await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(f.limit + 1).execute()).map(numeric);
  const more = rows.length > f.limit;
  const page = more ? rows.slice(0, f.limit) : rows;
  const last = page[page.length - 1];
  return { rows: page, next_cursor: more && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : null };
}

/** PostgreSQL gives `bigint` columns back as numbers or strings: every count and time a number. */
function numeric(r: McpToolCallsTable): McpToolCallsTable {
  return { ...r, created_at: Number(r.created_at), latency_ms: Number(r.latency_ms), request_bytes: Number(r.request_bytes), response_bytes: Number(r.response_bytes) };
}

/** Most groups one summary returns (the ones with the most calls). */
export const MCP_SUMMARY_MAX_GROUPS = 500;

/** A group's `key_id` condition: the admin key's calls have none. */
const keyCondition = (keyId: string | null) => (keyId === null ? { op: 'is' as const, value: null } : { op: '=' as const, value: keyId });

/**
 * Calls matching the filter grouped by server and tool (and by key with `byKey`): counts per
 * status (one GROUP BY in the database) and the nearest-rank p50/p95 of `latency_ms`, each
 * read by the database as one ordered row of its group (`order by latency_ms limit 1 offset
 * k`), so no group's rows are held in memory here. Ordered by calls (most first), then server
 * and tool; at most {@link MCP_SUMMARY_MAX_GROUPS} groups.
 */
export async function summarizeMcpCalls(db: Kysely<Database>, f: McpCallFilter & { byKey: boolean }): Promise<McpCallSummaryRow[]> {
  const count = (status: string) => sql<number>`sum(case when ${sql.ref('status')} = ${status} then 1 else 0 end)`;
  let q = filtered(db, f)
    .select((eb) => ['server', 'tool', eb.fn.countAll<number>().as('calls'), count('ok').as('ok'), count('tool_error').as('tool_errors'), count('error').as('errors'), count('refused').as('refused')])
    .groupBy(['server', 'tool']);
  if (f.byKey) q = q.select('key_id').groupBy('key_id');
  const groups = (await q.orderBy(sql`count(*)`, 'desc').orderBy('server').orderBy('tool').limit(MCP_SUMMARY_MAX_GROUPS).execute()) as unknown as Array<{ server: string; tool: string; key_id?: string | null; calls: number | string; ok: number | string; tool_errors: number | string; errors: number | string; refused: number | string }>;
  return Promise.all(
    groups.map(async (g): Promise<McpCallSummaryRow> => {
      const calls = Number(g.calls);
      const at = async (p: number): Promise<number> => {
        let lq = filtered(db, f).select('latency_ms').where('server', '=', g.server).where('tool', '=', g.tool);
        if (f.byKey) {
          const k = keyCondition(g.key_id ?? null);
          lq = k.op === 'is' ? lq.where('key_id', 'is', null) : lq.where('key_id', '=', k.value);
        }
        const rank = Math.min(calls - 1, Math.max(0, Math.ceil((p / 100) * calls) - 1));
        const row = await lq.orderBy('latency_ms').limit(1).offset(rank).executeTakeFirst();
        return row === undefined ? 0 : Number(row.latency_ms);
      };
      const [p50, p95] = await Promise.all([at(50), at(95)]);
      return {
        server: g.server,
        tool: g.tool,
        ...(f.byKey ? { key_id: g.key_id ?? 'admin' } : {}),
        calls,
        ok: Number(g.ok),
        tool_errors: Number(g.tool_errors),
        errors: Number(g.errors),
        refused: Number(g.refused),
        p50_latency_ms: p50,
        p95_latency_ms: p95,
      };
    }),
  );
}

const DAY_MS = 86_400_000;
/** Rows cleared per statement. */
const PURGE_BATCH = 2_000;
const holdsText = sql<SqlBool>`(${sql.ref('arguments')} is not null or ${sql.ref('result')} is not null)`;

/**
 * Clear the text of MCP call records past their retention: `arguments` and `result` become NULL
 * once `created_at + retention days < now` (rows under `none` never hold text), in batches, one
 * retention value at a time (as `purgeExpiredContent` does for generations).
 * @returns how many records were cleared.
 */
export async function purgeExpiredMcpCallText(db: Kysely<Database>, now: number = Date.now()): Promise<number> {
  const retentions = await db.selectFrom('mcp_tool_calls').select('retention').distinct().where(holdsText).execute();
  let purged = 0;
  for (const { retention } of retentions) {
    if (!/^\d{1,6}$/.test(retention)) continue;
    const cutoff = now - Number(retention) * DAY_MS;
    for (;;) {
      const res = await db
        .updateTable('mcp_tool_calls')
        .set({ arguments: null, result: null })
        .where('id', 'in', (eb) => eb.selectFrom('mcp_tool_calls').select('id').where(holdsText).where('retention', '=', retention).where('created_at', '<', cutoff).limit(PURGE_BATCH))
        .executeTakeFirst();
      const n = Number(res.numUpdatedRows);
      purged += n;
      if (n < PURGE_BATCH) break;
    }
  }
  return purged;
}
