import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { mcpKeyView } from '../../mcp/key-view.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { listMcpCalls, MCP_CALL_STATUSES, MCP_SUMMARY_MAX_RANGE_MS, summarizeMcpCalls, type McpCallFilter, type McpCallStatus } from '../../store/mcp-calls.js';
import { decodeCursor } from '../../store/generation-search.js';
import type { ApiKey } from '../../store/keys.js';
import type { Database, McpToolCallsTable } from '../../store/schema.js';
import { bad, keyFilter, oneOf, onlyKnown, text, time, type Query } from './usage.js';

const LIST_PARAMS = ['key_id', 'server', 'tool', 'status', 'since', 'until', 'limit', 'cursor'] as const;
const SUMMARY_PARAMS = ['key_id', 'server', 'tool', 'status', 'since', 'until', 'by_key'] as const;
const DAY_MS = 86_400_000;

/** The filters both routes share; a key other than the admin key reads only its own calls. */
function filterOf(q: Query, key: ApiKey): McpCallFilter {
  const since = time(q, 'since');
  const until = time(q, 'until');
  if (since !== undefined && until !== undefined && since >= until) throw bad('since', 'must be before until');
  return { keyId: keyFilter(q, key), server: text(q, 'server'), tool: text(q, 'tool'), status: oneOf<McpCallStatus>(q, 'status', MCP_CALL_STATUSES), since, until };
}

/** The public shape of one MCP call record: times ISO 8601, `key_id` `admin` for the admin key's calls, text only where kept. */
export function mcpCallObject(r: McpToolCallsTable) {
  const json = (s: string | null): unknown => {
    if (s === null) return null;
    try {
      return JSON.parse(s) as unknown;
    } catch {
      return s; // cut at MAX_CALL_TEXT: no longer JSON
    }
  };
  return {
    id: r.id,
    created_at: new Date(r.created_at).toISOString(),
    key_id: r.key_id ?? 'admin',
    team_id: r.team_id,
    request_id: r.request_id,
    session_id: r.session_id,
    server: r.server,
    tool: r.tool,
    status: r.status,
    error: r.error_code === null ? null : { code: r.error_code, message: r.error_message },
    latency_ms: r.latency_ms,
    request_bytes: r.request_bytes,
    response_bytes: r.response_bytes,
    retention: r.retention,
    arguments: json(r.arguments),
    result: json(r.result),
  };
}

/**
 * `GET /v1/mcp/servers`: the servers of the key's view and their tools.
 * `GET /v1/mcp/calls`: MCP tool-call records, newest first, cursor paged (`limit` 1–200, default
 * 50; `next_cursor`). `GET /v1/mcp/calls/summary`: calls, ok, tool errors, errors, refusals and
 * p50/p95 latency (ms) by server and tool (`by_key=true`: and by key) over `since`…`until`
 * (default the last 24 h, at most 31 days). Filters: `key_id`, `server`, `tool`, `status`
 * (ok|tool_error|error|refused), `since`, `until` (ISO 8601 or unix ms). A key sees only its
 * own calls; the admin key sees all (`key_id=admin`: its own). Bad parameters are 400
 * `invalid_request` naming them.
 */
export function registerMcpCallRoutes(app: FastifyInstance, rt: () => GatewayRuntime, db: Kysely<Database>): void {
  /** `GET /v1/mcp/servers`: the configured MCP servers the key's view names, with the tools it may use (asked now) or why they could not be listed. */
  app.get<{ Querystring: Query }>('/v1/mcp/servers', { config: { ownsPath: true } }, async (req) => {
    onlyKnown(req.query, []);
    return { data: await rt().mcp.serverStatuses({ key: mcpKeyView(req.apiKey, rt().config.retention) }) };
  });

  app.get<{ Querystring: Query }>('/v1/mcp/calls', { config: { ownsPath: true } }, async (req) => {
    const q = req.query;
    onlyKnown(q, LIST_PARAMS);
    const limitText = text(q, 'limit');
    let limit = 50;
    if (limitText !== undefined) {
      if (!/^\d{1,4}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > 200) throw bad('limit', `must be an integer from 1 to 200 (got ${JSON.stringify(limitText)})`);
      limit = Number(limitText);
    }
    const cursor = text(q, 'cursor');
    if (cursor !== undefined && !decodeCursor(cursor)) throw bad('cursor', 'is not a cursor from a previous page (next_cursor)');
    const page = await listMcpCalls(db, { ...filterOf(q, req.apiKey), limit, cursor });
    return { data: page.rows.map(mcpCallObject), next_cursor: page.next_cursor };
  });

  app.get<{ Querystring: Query }>('/v1/mcp/calls/summary', { config: { ownsPath: true } }, async (req) => {
    const q = req.query;
    onlyKnown(q, SUMMARY_PARAMS);
    const f = filterOf(q, req.apiKey);
    const until = f.until ?? Date.now();
    const since = f.since ?? until - DAY_MS;
    if (since >= until) throw bad('since', 'must be before until');
    if (until - since > MCP_SUMMARY_MAX_RANGE_MS) throw bad('since', 'the range is longer than 31 days, the most a summary reads');
    const byKey = oneOf(q, 'by_key', ['true', 'false'] as const) === 'true';
    const data = await summarizeMcpCalls(db, { ...f, since, until, byKey });
    return { since: new Date(since).toISOString(), until: new Date(until).toISOString(), data };
  });
}
