import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../config/schema.js';
import type { UpstreamConnection } from './upstream-connection.js';

/**
 * The MCP gateway's types: what its host passes in (a key's view, a request's context, the
 * options with the call observer) and what an observer sees of a tool call; and, for the files
 * of mcp/ only, a session and what its handlers need of the gateway ({@link SessionHost}).
 */

/** The part of a gateway key the MCP gateway reads (store/keys.ts `ApiKey`, settings of issue 22). */
export interface McpKeyView {
  id: string;
  /** `allowed_tools` of the key (tool-patterns.ts `keyAllowsTool`); empty = every tool. */
  allowedTools: readonly string[];
  /** `max_tools` of the key: most entries one `tools/list` returns, `search_tools` included; null = no cap. */
  maxTools: number | null;
  /** What the observer needs of the key (records, limits), passed through untouched; the gateway never reads it. */
  caller?: unknown;
}

/** One tool call as an observer sees it (the seam for records, rate limits, metrics and spans). */
export interface McpToolCallEvent {
  keyId: string;
  /** The key view of the session (its `caller` for the observer). */
  key: McpKeyView;
  /** The gateway's MCP session (`Mcp-Session-Id`; `inproc_…` for an in-process session). */
  sessionId: string;
  /** The request of an in-process session's host (the Responses `mcp` tool loop's `req_…`); undefined for `/mcp` clients. */
  requestId: string | undefined;
  /** The model's tool-call id when the caller gave one (`_meta["dev.opinference/tool_call_id"]`, the tool loop does). */
  callId: string | undefined;
  /** The configured server id; '' when the name matched no server. */
  server: string;
  /** The upstream's own tool name (the client's name when it matched no server). */
  tool: string;
  /** The call's `arguments` (undefined when it sent none). */
  arguments: Record<string, unknown> | undefined;
  /** Bytes of the call's `arguments` as JSON. */
  argumentBytes: number;
}

/**
 * How a tool call ended: `ok`, `tool_error` (a result with `isError: true`), `error` (timed
 * out, failed upstream), or `refused` (not in the key's view, unknown, or refused by `admit`:
 * nothing was sent upstream).
 */
export interface McpToolCallOutcome extends McpToolCallEvent {
  status: 'ok' | 'tool_error' | 'error' | 'refused';
  /** From the gateway's receipt of the call to its answer, in ms. */
  latencyMs: number;
  /** The result (ok and tool_error). */
  result?: CallToolResult;
  /** Bytes of the result as JSON (0 when there is none). */
  resultBytes: number;
  /** The catalog code (or the upstream's JSON-RPC code) and message of a failure or refusal. */
  error?: { code: string | number; message: string };
}

/**
 * Where records, rate limits, metrics and spans plug in at `tools/call` (issue 22 item 4,
 * server/mcp-call-observer.ts): `admit` runs before anything is sent upstream and may refuse by
 * throwing a GatewayError (e.g. `mcp_rate_limited`); `ended` runs once per call, whatever its
 * outcome, refusals (`admit`'s and the key view's) included. Calls of the gateway's own
 * `search_tools` are not observed.
 */
export interface McpCallObserver {
  admit?(call: McpToolCallEvent): Promise<void> | void;
  ended?(outcome: McpToolCallOutcome): void;
}

/** The `_meta` key a caller names its model's tool-call id with (kept in the gateway, not sent upstream). */
export const TOOL_CALL_ID_META = 'dev.opinference/tool_call_id';

/** What the gateway needs from its host. */
export interface McpGatewayOptions {
  /** Log of warnings (an upstream that failed a list, a stdio child's stderr). */
  warn(message: string): void;
  observer?: McpCallObserver;
  /** A session with no request for this long is closed (its upstream sessions too), in ms. Default 30 min. */
  sessionIdleMs?: number;
}

/** What one HTTP request to `/mcp` or `/mcp/{server}` carries besides the request itself. */
export interface McpRequestContext {
  key: McpKeyView;
  /** `/mcp/{server}`: only that server, its names not namespaced. Undefined for `/mcp`. */
  only?: string;
  /** The host's request an in-process session serves (the Responses tool loop's id), for the observer. */
  requestId?: string;
}

/** The gateway's own tool listed when a key's `max_tools` cuts the list. */
export const SEARCH_TOOL_NAME = 'search_tools';

/** The `search_tools` tool as listed. */
export const SEARCH_TOOL: Tool = {
  name: SEARCH_TOOL_NAME,
  description: 'Search the MCP tools this gateway offers beyond the ones listed (the list is capped). Returns matching tools with their names, descriptions and input schemas; call them by name as usual.',
  inputSchema: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'Words to look for in tool names and descriptions' },
      limit: { type: 'integer', minimum: 1, maximum: 50, description: 'Most tools to return (default 10)' },
    },
    required: ['query'],
  },
};

/** One client session of the gateway: the SDK server and transport, and its upstream connections (inside mcp/ only). */
export interface GatewaySession {
  id: string | undefined;
  key: McpKeyView;
  only: string | undefined;
  requestId: string | undefined;
  server: Server;
  /** Streamable HTTP, or the legacy HTTP+SSE transport (`GET …/sse` + `POST …/messages`). */
  transport: StreamableHTTPServerTransport | SSEServerTransport;
  /** Connections to remote (HTTP, SSE) upstreams, opened for this session on first use. */
  connections: Map<string, UpstreamConnection>;
  /** Resource URIs seen in this session's `resources/list`, by the server that listed them. */
  resourceOwners: Map<string, string>;
  lastSeen: number;
}

/** Bytes of a value as JSON (0 for undefined). */
export const bytesOf = (v: unknown): number => (v === undefined ? 0 : Buffer.byteLength(JSON.stringify(v)));

/**
 * What a session's handlers (session-handlers.ts, session-view.ts) need from the gateway that
 * owns the session (mcp-gateway.ts): the servers configured now, the session's connection to one,
 * the log of warnings and the call observer.
 */
export interface SessionHost {
  servers(): readonly McpServerConfig[];
  connection(session: GatewaySession, server: McpServerConfig): UpstreamConnection;
  warn(message: string): void;
  observer(): McpCallObserver | undefined;
}
