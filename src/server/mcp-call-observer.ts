import { GatewayError } from '../errors/gateway-error.js';
import type { McpCaller } from '../mcp/key-view.js';
import type { McpCallObserver, McpToolCallEvent, McpToolCallOutcome } from '../mcp/mcp-gateway.js';
import { mcpToolCallEnd, type McpToolCallEndEvent } from '../pipeline/state/events.js';
import type { GatewayRuntime } from '../pipeline/state/runtime.js';
import type { McpToolCallsTable } from '../store/schema.js';
import { newMcpCallId } from '../util/ids.js';

/** The prefix of a key's MCP call window in the limit store (`mcp:<key id>`), apart from its request window. */
export const MCP_LIMIT_PREFIX = 'mcp:';

/** Most distinct `tool` label values per server; past it a new name counts under `_other` (a client may send any name). */
export const MAX_TOOL_LABELS_PER_SERVER = 500;

/** The observer's reading of a key view's `caller` (mcp/key-view.ts); a view without one is a key with no limit and no text kept. */
function callerOf(call: McpToolCallEvent): McpCaller {
  const c = call.key.caller as McpCaller | undefined;
  return c ?? { isAdmin: false, teamId: null, retention: 'none', callsPerMinute: null };
}

/** The record of one ended call: text (arguments, result) only when the caller's retention keeps text. */
export function mcpCallRow(o: McpToolCallOutcome, now: number): McpToolCallsTable {
  const caller = callerOf(o);
  const keepText = caller.retention !== 'none';
  return {
    id: newMcpCallId(),
    created_at: Math.round(now - o.latencyMs),
    key_id: caller.isAdmin ? null : o.keyId,
    team_id: caller.teamId,
    request_id: o.requestId ?? null,
    session_id: o.sessionId,
    server: o.server,
    tool: o.tool,
    status: o.status,
    error_code: o.error === undefined ? null : String(o.error.code),
    error_message: o.error?.message ?? null,
    latency_ms: Math.round(o.latencyMs),
    request_bytes: o.argumentBytes,
    response_bytes: o.resultBytes,
    retention: String(caller.retention),
    arguments: keepText && o.arguments !== undefined ? JSON.stringify(o.arguments) : null,
    result: keepText && o.result !== undefined ? JSON.stringify(o.result) : null,
  };
}

/**
 * The MCP gateway's call observer (issue 22 item 4), built with the runtime: at `admit` the
 * key's `mcp_calls_per_minute` (a fixed one-minute window of the limit store under
 * `mcp:<key id>`, so Redis makes it exact across replicas, apart from the key's request window);
 * at `ended` one record queued on the runtime's MCP call writer (off the call path), the
 * Prometheus series (`opinference_mcp_tool_calls_total`, `…_duration_seconds`), and the
 * `opinference:mcp:tool_call:end` event the OpenTelemetry subscriber turns into an
 * `execute_tool` span.
 * @throws GatewayError `mcp_rate_limited` (from `admit`, with `metadata.retry_after_ms`), or the
 *   limit store's `limits_unavailable`.
 */
export function mcpCallObserver(rt: () => GatewayRuntime): McpCallObserver {
  /** The `tool` label values used so far, per server. */
  const labelled = new Map<string, Set<string>>();
  const toolLabel = (server: string, tool: string): string => {
    let seen = labelled.get(server);
    if (!seen) labelled.set(server, (seen = new Set()));
    if (seen.has(tool)) return tool;
    if (seen.size >= MAX_TOOL_LABELS_PER_SERVER) return '_other';
    seen.add(tool);
    return tool;
  };
  return {
    async admit(call) {
      const limit = callerOf(call).callsPerMinute;
      if (limit === null) return;
      const r = await rt().limits.hitRequests(`${MCP_LIMIT_PREFIX}${call.keyId}`, limit, Date.now());
      if (!r.ok) {
        throw new GatewayError('mcp_rate_limited', `MCP tool call refused: this key may make ${limit} MCP tool calls per minute (mcp_calls_per_minute); the window resets in ${Math.ceil(r.resetMs / 1000)} s`, { metadata: { retry_after_ms: r.resetMs } });
      }
    },
    ended(o) {
      const runtime = rt();
      const now = Date.now();
      runtime.mcpCalls.add(mcpCallRow(o, now));
      // A name of no server is the client's: kept out of the label values (the series would grow with it); so is a server's past MAX_TOOL_LABELS_PER_SERVER names.
      const labels = o.server === '' ? { server: '', tool: '' } : { server: o.server, tool: toolLabel(o.server, o.tool) };
      runtime.metrics.mcpToolCalls.inc({ ...labels, status: o.status });
      if (o.status !== 'refused') runtime.metrics.mcpToolCallDuration.observe(labels, o.latencyMs / 1000);
      if (mcpToolCallEnd.hasSubscribers) mcpToolCallEnd.publish({ outcome: o, startedAt: now - o.latencyMs } satisfies McpToolCallEndEvent);
    },
  };
}
