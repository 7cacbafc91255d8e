import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  isInitializeRequest,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type Progress,
  type Prompt,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../config/schema.js';
import { GatewayError } from '../errors/gateway-error.js';
import { jsonRpcErrorBody, McpWireError, toMcpError } from './mcp-errors.js';
import { keyAllowsTool, keySeesServer, namespaced, serverHides, splitNamespaced } from './tool-patterns.js';
import { UpstreamConnection, type ListKind, type UpstreamRequestExtra } from './upstream-connection.js';

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

const SEARCH_TOOL: Tool = {
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

/** One client session of the gateway: the SDK server and transport, and its upstream connections. */
interface GatewaySession {
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

const bytesOf = (v: unknown): number => (v === undefined ? 0 : Buffer.byteLength(JSON.stringify(v)));

/**
 * The MCP gateway (issue 22): one MCP server per client session over the Streamable HTTP
 * transport (the official SDK's `Server` and `StreamableHTTPServerTransport`), aggregating the
 * configured upstream servers (`mcp_servers`):
 * - tools and prompts namespaced `server__name` (`/mcp/{server}` keeps the upstream's names),
 *   resources by their own URI, routed to the server that listed them;
 * - the key's view (`allowed_tools`, `max_tools` with the `search_tools` tool) over the servers'
 *   own allow and deny lists, for lists and calls alike;
 * - upstream sessions opened lazily per client session (HTTP, SSE) or shared by every session
 *   (stdio: one child process per server, started from the config only), re-initialised when
 *   an upstream forgets its session;
 * - upstream `list_changed` notifications passed on to the sessions that see that server.
 * Sessions live in this process (see docs/mcp.md on sticky sessions).
 * @see https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http
 */
export class McpGateway {
  private servers: McpServerConfig[];
  private readonly sessions = new Map<string, GatewaySession>();
  /** Connections to stdio upstreams, one per server, shared by every session. */
  private readonly shared = new Map<string, UpstreamConnection>();
  private readonly sweep: NodeJS.Timeout;
  private closed = false;

  constructor(servers: readonly McpServerConfig[], private readonly options: McpGatewayOptions) {
    this.servers = [...servers];
    const idle = options.sessionIdleMs ?? 30 * 60_000;
    this.sweep = setInterval(() => {
      const now = Date.now();
      // A legacy session lives as long as its event stream (closing it ends the session).
      for (const s of [...this.sessions.values()]) if (!(s.transport instanceof SSEServerTransport) && now - s.lastSeen > idle) void this.endSession(s);
    }, Math.min(idle, 60_000));
    this.sweep.unref();
  }

  /** The configured server ids, in config order. */
  serverIds(): string[] {
    return this.servers.map((s) => s.id);
  }

  /** Whether a server id is configured. */
  hasServer(id: string): boolean {
    return this.servers.some((s) => s.id === id);
  }

  /** Open client sessions (for tests and health). */
  get sessionCount(): number {
    return this.sessions.size;
  }

  /**
   * Apply a reloaded `mcp_servers`: connections of servers that changed or went are closed
   * (reopened on next use), and every session is told its tool, resource and prompt lists changed.
   */
  reload(servers: readonly McpServerConfig[]): void {
    const before = new Map(this.servers.map((s) => [s.id, JSON.stringify(s)]));
    this.servers = [...servers];
    const after = new Map(this.servers.map((s) => [s.id, JSON.stringify(s)]));
    const changed = new Set([...before.keys(), ...after.keys()].filter((id) => before.get(id) !== after.get(id)));
    if (changed.size === 0) return;
    for (const id of changed) {
      const c = this.shared.get(id);
      this.shared.delete(id);
      void c?.close();
      for (const s of this.sessions.values()) {
        const sc = s.connections.get(id);
        s.connections.delete(id);
        void sc?.close();
      }
    }
    for (const s of this.sessions.values()) for (const kind of ['tools', 'resources', 'prompts'] as const) this.notify(s, kind);
  }

  /**
   * Serve one HTTP request of the Streamable HTTP transport (POST, GET or DELETE): the caller
   * (server/routes/mcp.ts) has authenticated the key and parsed the JSON body. A request
   * without `Mcp-Session-Id` must be an `initialize` (a new session); one with an id must name a
   * session of this process opened by the same key on the same endpoint, else 404 (-32001), and
   * the client initialises again.
   */
  async handle(req: IncomingMessage, res: ServerResponse, body: unknown, ctx: McpRequestContext): Promise<void> {
    const header = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(header) ? header[0] : header;
    if (this.closed) return sendJson(res, 503, jsonRpcErrorBody(new GatewayError('gateway_shutting_down', 'the gateway is shutting down')));
    if (sessionId !== undefined) {
      const session = this.sessions.get(sessionId);
      if (!session || session.key.id !== ctx.key.id || session.only !== ctx.only) {
        return sendJson(res, 404, jsonRpcErrorBody(new GatewayError('mcp_session_not_found', 'Session not found: no MCP session with this Mcp-Session-Id on this gateway for this key and endpoint; send initialize again')));
      }
      if (!(session.transport instanceof StreamableHTTPServerTransport)) {
        return sendJson(res, 400, jsonRpcErrorBody(new GatewayError('invalid_request', 'Bad Request: this session uses the legacy HTTP+SSE transport; POST its messages to the endpoint its event stream named', { param: 'mcp-session-id' })));
      }
      session.key = ctx.key;
      session.lastSeen = Date.now();
      await session.transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      return sendJson(res, 400, jsonRpcErrorBody(new GatewayError('invalid_request', 'Bad Request: no Mcp-Session-Id; the first request of a session is initialize (POST)', { param: 'mcp-session-id' })));
    }
    const session = this.openSession(ctx);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        session.id = id;
        this.sessions.set(id, session);
      },
      onsessionclosed: () => void this.endSession(session),
    });
    session.transport = transport;
    transport.onclose = () => void this.endSession(session);
    await session.server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  /**
   * `GET …/sse` of the legacy HTTP+SSE transport (revision 2024-11-05, for clients that still
   * use it): opens a session whose event stream first names its message endpoint
   * (`messagesPath?sessionId=…`); the stream stays open until the client leaves.
   * @see https://modelcontextprotocol.io/specification/2024-11-05/basic/transports#http-with-sse
   */
  async handleLegacyStream(res: ServerResponse, messagesPath: string, ctx: McpRequestContext): Promise<void> {
    if (this.closed) return sendJson(res, 503, jsonRpcErrorBody(new GatewayError('gateway_shutting_down', 'the gateway is shutting down')));
    const session = this.openSession(ctx);
    const transport = new SSEServerTransport(messagesPath, res);
    session.transport = transport;
    session.id = transport.sessionId;
    this.sessions.set(transport.sessionId, session);
    transport.onclose = () => void this.endSession(session);
    await session.server.connect(transport);
  }

  /**
   * `POST …/messages?sessionId=…` of the legacy HTTP+SSE transport: one JSON-RPC message of a
   * session opened by {@link handleLegacyStream} with the same key on the same endpoint, else
   * 404; the answer goes out on the session's event stream (this request gets 202).
   */
  async handleLegacyMessage(req: IncomingMessage, res: ServerResponse, body: unknown, sessionId: string | undefined, ctx: McpRequestContext): Promise<void> {
    const session = sessionId === undefined ? undefined : this.sessions.get(sessionId);
    if (!session || !(session.transport instanceof SSEServerTransport) || session.key.id !== ctx.key.id || session.only !== ctx.only) {
      return sendJson(res, 404, jsonRpcErrorBody(new GatewayError('mcp_session_not_found', 'Session not found: no legacy MCP session with this sessionId on this gateway for this key and endpoint; open GET …/sse again')));
    }
    session.key = ctx.key;
    session.lastSeen = Date.now();
    await session.transport.handlePostMessage(req, res, body);
  }

  /**
   * An in-process client session, without HTTP: a session with the key's view (lists, calls,
   * the observer's admission and records, upstream connections) served over `transport`, the
   * server side of the SDK's `InMemoryTransport` pair (in-process-client.ts). Not counted in
   * {@link sessionCount}; it ends, its upstream sessions with it, when the transport closes.
   * @throws GatewayError `gateway_shutting_down` after {@link close}.
   */
  async connectInProcess(transport: Transport, ctx: McpRequestContext): Promise<void> {
    if (this.closed) throw new GatewayError('gateway_shutting_down', 'the gateway is shutting down');
    const session = this.openSession(ctx);
    session.id = `inproc_${randomUUID()}`;
    session.transport = transport as unknown as StreamableHTTPServerTransport;
    transport.onclose = () => void this.endSession(session);
    await session.server.connect(transport);
  }

  /** A new session with its server and handlers; the caller attaches the transport. */
  private openSession(ctx: McpRequestContext): GatewaySession {
    const server = new Server(
      { name: 'opinference', version: '1.0.0' },
      {
        capabilities: { tools: { listChanged: true }, resources: { listChanged: true }, prompts: { listChanged: true } },
        instructions: ctx.only === undefined ? 'Tools of several MCP servers, named <server>__<tool>.' : undefined,
      },
    );
    const session: GatewaySession = {
      id: undefined,
      key: ctx.key,
      only: ctx.only,
      requestId: ctx.requestId,
      server,
      transport: undefined as unknown as StreamableHTTPServerTransport,
      connections: new Map(),
      resourceOwners: new Map(),
      lastSeen: Date.now(),
    };
    this.installHandlers(session);
    return session;
  }

  /** End a session: forget it, close its upstream connections and its transport. */
  private async endSession(session: GatewaySession): Promise<void> {
    if (session.id !== undefined && this.sessions.get(session.id) === session) this.sessions.delete(session.id);
    else if (session.connections.size === 0) return;
    const connections = [...session.connections.values()];
    session.connections.clear();
    await Promise.all(connections.map((c) => c.close()));
    await session.server.close().catch(() => {});
  }

  /** The servers a session may reach: the endpoint's one, or all; those whose tools the key names at all. */
  private visibleServers(session: GatewaySession): McpServerConfig[] {
    return this.servers.filter((s) => (session.only === undefined || s.id === session.only) && keySeesServer(session.key.allowedTools, s.id));
  }

  /** The connection a session uses to a server (its own for remote servers, the shared one for stdio). */
  private connection(session: GatewaySession, server: McpServerConfig): UpstreamConnection {
    const map = server.transport === 'stdio' ? this.shared : session.connections;
    let c = map.get(server.id);
    if (!c) {
      c = new UpstreamConnection(server, {
        onListChanged: (kind) => this.upstreamListChanged(server.id, kind, server.transport === 'stdio' ? undefined : session),
        warn: this.options.warn,
      });
      map.set(server.id, c);
    }
    return c;
  }

  /** Pass an upstream's `list_changed` on to the session(s) that see the server. */
  private upstreamListChanged(serverId: string, kind: ListKind, session: GatewaySession | undefined): void {
    const targets = session ? [session] : [...this.sessions.values()];
    for (const s of targets) if (this.visibleServers(s).some((v) => v.id === serverId)) this.notify(s, kind);
  }

  private notify(session: GatewaySession, kind: ListKind): void {
    const send = kind === 'tools' ? session.server.sendToolListChanged() : kind === 'resources' ? session.server.sendResourceListChanged() : session.server.sendPromptListChanged();
    void send.catch(() => {});
  }

  /** The name a client sees for a server's tool or prompt on this session's endpoint. */
  private clientName(session: GatewaySession, serverId: string, name: string): string {
    return session.only === undefined ? namespaced(serverId, name) : name;
  }

  /**
   * The server and upstream name a client's tool or prompt name means on this session's endpoint
   * (whether the key may use it is checked apart, so a refusal can say why).
   * @throws GatewayError `mcp_unknown_tool` for a name of no configured server (of this endpoint);
   * `mcp_tool_not_allowed` for a prompt of a server the key's view leaves out.
   */
  private resolveName(session: GatewaySession, name: string, what: 'tool' | 'prompt'): { server: McpServerConfig; name: string } {
    const split = session.only === undefined ? splitNamespaced(name) : { serverId: session.only, name };
    const server = split === undefined ? undefined : this.servers.find((s) => s.id === split.serverId && (session.only === undefined || s.id === session.only));
    if (!split || !server) {
      const hint = session.only === undefined ? ` (names are <server>__<${what}>; servers: ${this.visibleServers(session).map((s) => s.id).join(', ') || 'none'})` : '';
      throw new GatewayError('mcp_unknown_tool', `no MCP ${what} "${name}" on this gateway${hint}`, { param: 'name' });
    }
    if (what === 'prompt' && !keySeesServer(session.key.allowedTools, server.id)) {
      throw new GatewayError('mcp_tool_not_allowed', `prompt "${name}" may not be used with this key: its allowed_tools name nothing of MCP server "${server.id}"`, { param: 'name' });
    }
    return { server, name: split.name };
  }

  /** Every tool the session's key may see, in server order (a server that fails is skipped and logged). */
  private async visibleTools(session: GatewaySession): Promise<Tool[]> {
    const perServer = await Promise.all(
      this.visibleServers(session).map(async (server) => {
        try {
          const tools = await this.connection(session, server).listTools();
          return tools
            .filter((t) => serverHides(server, t.name) === undefined && keyAllowsTool(session.key.allowedTools, server.id, t.name))
            .map((t) => ({ ...t, name: this.clientName(session, server.id, t.name) }));
        } catch (err) {
          this.options.warn(`MCP server "${server.id}": tools/list failed, its tools are left out: ${err instanceof Error ? err.message : String(err)}`);
          return [];
        }
      }),
    );
    return perServer.flat();
  }

  private installHandlers(session: GatewaySession): void {
    const { server } = session;
    const guarded = <A extends unknown[], R>(fn: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
      try {
        return await fn(...args);
      } catch (err) {
        if (!(err instanceof GatewayError) && !(err instanceof McpError) && !(err instanceof McpWireError)) this.options.warn(`MCP gateway: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
        throw toMcpError(err);
      }
    };

    server.setRequestHandler(ListToolsRequestSchema, guarded(async () => {
      const tools = await this.visibleTools(session);
      const max = session.key.maxTools;
      if (max === null || tools.length <= max) return { tools };
      return { tools: [...tools.slice(0, Math.max(0, max - 1)), SEARCH_TOOL] };
    }));

    server.setRequestHandler(CallToolRequestSchema, guarded(async (request, extra) => {
      const { name } = request.params;
      if (name === SEARCH_TOOL_NAME && session.key.maxTools !== null) return this.searchTools(session, request.params.arguments);
      // The client's progress token and tool-call id stay here: the upstream gets the SDK's own token, and its progress is relayed under the client's.
      const { progressToken, [TOOL_CALL_ID_META]: callId, ...meta } = request.params._meta ?? {};
      const event: McpToolCallEvent = {
        keyId: session.key.id, key: session.key, sessionId: session.id ?? '', requestId: session.requestId, callId: typeof callId === 'string' ? callId : undefined,
        server: '', tool: name, arguments: request.params.arguments, argumentBytes: bytesOf(request.params.arguments),
      };
      const started = performance.now();
      let target: { server: McpServerConfig; name: string };
      try {
        target = this.resolveName(session, name, 'tool');
        event.server = target.server.id;
        event.tool = target.name;
        const hidden = serverHides(target.server, target.name);
        if (hidden !== undefined) throw new GatewayError('mcp_tool_not_allowed', `tool "${name}" may not be called: ${hidden}`, { param: 'name' });
        if (!keyAllowsTool(session.key.allowedTools, target.server.id, target.name)) {
          throw new GatewayError('mcp_tool_not_allowed', `tool "${name}" may not be called with this key: it is not in the key's allowed_tools`, { param: 'name' });
        }
        await this.options.observer?.admit?.(event);
      } catch (err) {
        this.observeEnd(event, started, 'refused', undefined, err);
        throw err;
      }
      const onprogress = progressToken === undefined ? undefined : (p: Progress) => void extra.sendNotification({ method: 'notifications/progress', params: { ...p, progressToken } }).catch(() => {});
      const params = { ...request.params, ...(request.params._meta === undefined ? {} : { _meta: meta }) };
      return this.callTool(session, target.server, target.name, params, { signal: extra.signal, ...(onprogress === undefined ? {} : { onprogress }) }, event, started);
    }));

    server.setRequestHandler(ListPromptsRequestSchema, guarded(async () => {
      const lists = await Promise.all(this.visibleServers(session).map(async (s) => {
        try {
          return (await this.connection(session, s).listPrompts()).map((p): Prompt => ({ ...p, name: this.clientName(session, s.id, p.name) }));
        } catch (err) {
          this.options.warn(`MCP server "${s.id}": prompts/list failed, its prompts are left out: ${err instanceof Error ? err.message : String(err)}`);
          return [];
        }
      }));
      return { prompts: lists.flat() };
    }));

    server.setRequestHandler(GetPromptRequestSchema, guarded(async (request) => {
      const target = this.resolveName(session, request.params.name, 'prompt');
      return this.connection(session, target.server).getPrompt(target.name, request.params.arguments);
    }));

    server.setRequestHandler(ListResourcesRequestSchema, guarded(async () => ({ resources: await this.listResources(session) })));

    server.setRequestHandler(ListResourceTemplatesRequestSchema, guarded(async () => {
      const lists = await Promise.all(this.visibleServers(session).map(async (s) => {
        try {
          return await this.connection(session, s).listResourceTemplates();
        } catch (err) {
          this.options.warn(`MCP server "${s.id}": resources/templates/list failed: ${err instanceof Error ? err.message : String(err)}`);
          return [] as ResourceTemplate[];
        }
      }));
      return { resourceTemplates: lists.flat() };
    }));

    server.setRequestHandler(ReadResourceRequestSchema, guarded(async (request) => {
      const { uri } = request.params;
      let owner = session.resourceOwners.get(uri);
      if (owner === undefined) {
        await this.listResources(session);
        owner = session.resourceOwners.get(uri);
      }
      const visible = this.visibleServers(session);
      const server = visible.find((s) => s.id === owner) ?? (visible.length === 1 ? visible[0] : undefined);
      if (server) return this.connection(session, server).readResource(uri);
      // A URI of a template (not listed): the servers with templates are asked in order.
      for (const s of visible) {
        const c = this.connection(session, s);
        if (c.capabilities?.resources === undefined) continue;
        try {
          const templates = await c.listResourceTemplates();
          if (templates.some((t) => templateMatches(t.uriTemplate, uri))) return await c.readResource(uri);
        } catch {
          // Next server.
        }
      }
      throw new McpWireError(-32002, `Resource not found: no MCP server of this gateway lists ${uri}`, { code: 'mcp_unknown_tool', param: 'uri' });
    }));
  }

  /** Every resource of the visible servers, URIs kept; records which server listed each URI. */
  private async listResources(session: GatewaySession): Promise<Resource[]> {
    const lists = await Promise.all(this.visibleServers(session).map(async (s) => {
      try {
        const resources = await this.connection(session, s).listResources();
        for (const r of resources) if (!session.resourceOwners.has(r.uri)) session.resourceOwners.set(r.uri, s.id);
        return resources;
      } catch (err) {
        this.options.warn(`MCP server "${s.id}": resources/list failed, its resources are left out: ${err instanceof Error ? err.message : String(err)}`);
        return [];
      }
    }));
    return lists.flat();
  }

  /** Call an admitted tool upstream; the observer hears how it ended. */
  private async callTool(session: GatewaySession, server: McpServerConfig, tool: string, params: { name: string; arguments?: Record<string, unknown> | undefined; _meta?: Record<string, unknown> | undefined }, extra: UpstreamRequestExtra, event: McpToolCallEvent, started: number): Promise<CallToolResult> {
    try {
      const result = await this.connection(session, server).callTool({ ...params, name: tool }, extra);
      this.observeEnd(event, started, result.isError === true ? 'tool_error' : 'ok', result);
      return result;
    } catch (err) {
      this.observeEnd(event, started, 'error', undefined, err);
      throw err;
    }
  }

  /** Tell the observer how a call ended (an observer that throws is logged, never fails the call). */
  private observeEnd(event: McpToolCallEvent, started: number, status: McpToolCallOutcome['status'], result?: CallToolResult, err?: unknown): void {
    const ended = this.options.observer?.ended;
    if (!ended) return;
    let error: McpToolCallOutcome['error'];
    if (err !== undefined) {
      const e = toMcpError(err);
      error = { code: (e.data as { code?: string } | undefined)?.code ?? e.code, message: e.message };
    }
    try {
      ended({ ...event, status, latencyMs: performance.now() - started, resultBytes: bytesOf(result), ...(result === undefined ? {} : { result }), ...(error === undefined ? {} : { error }) });
    } catch (e) {
      this.options.warn(`MCP gateway: the call observer failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** The gateway's `search_tools`: tools of the key's whole view whose name or description holds the query's words. */
  private async searchTools(session: GatewaySession, args: Record<string, unknown> | undefined): Promise<CallToolResult> {
    const query = typeof args?.query === 'string' ? args.query : '';
    const limit = typeof args?.limit === 'number' && Number.isInteger(args.limit) ? Math.min(50, Math.max(1, args.limit)) : 10;
    const words = query.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
    if (words.length === 0) return { content: [{ type: 'text', text: 'give a query: words to look for in tool names and descriptions' }], isError: true };
    const scored = (await this.visibleTools(session))
      .map((t) => {
        const hay = `${t.name} ${t.title ?? ''} ${t.description ?? ''}`.toLowerCase();
        return { t, score: words.filter((w) => hay.includes(w)).length };
      })
      .filter((x) => x.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, limit)
      .map(({ t }) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
    return { content: [{ type: 'text', text: JSON.stringify({ tools: scored }) }], structuredContent: { tools: scored } };
  }

  /**
   * Keys changed (the key API, here or on another replica): every session is told its tool list
   * may have changed, and its next request reads the key's current `allowed_tools`.
   */
  keysChanged(): void {
    for (const s of this.sessions.values()) this.notify(s, 'tools');
  }

  /** Close every session and upstream connection (stdio children end); later requests get 503. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweep);
    const sessions = [...this.sessions.values()];
    await Promise.all(sessions.map(async (s) => {
      await this.endSession(s);
      await s.transport.close().catch(() => {});
    }));
    const shared = [...this.shared.values()];
    this.shared.clear();
    await Promise.all(shared.map((c) => c.close()));
  }
}

/** Whether a URI fits an RFC 6570 template at its simplest (`{var}` = one path segment, `{+var}` = anything). */
function templateMatches(template: string, uri: string): boolean {
  const re = template.split(/(\{[^}]*\})/).map((part) => (part.startsWith('{') ? (part.startsWith('{+') ? '.+' : '[^/]+') : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('');
  return new RegExp(`^${re}$`).test(uri);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

