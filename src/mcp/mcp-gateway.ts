import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../config/schema.js';
import { GatewayError } from '../errors/gateway-error.js';
import { jsonRpcErrorBody } from './mcp-errors.js';
import type { GatewaySession, McpGatewayOptions, McpRequestContext, SessionHost } from './mcp-types.js';
import { installHandlers } from './session-handlers.js';
import { serverStatuses, visibleServers, type McpServerStatus } from './session-view.js';
import { UpstreamConnection, type ListKind } from './upstream-connection.js';

export { SEARCH_TOOL_NAME, TOOL_CALL_ID_META } from './mcp-types.js';
export type { McpServerStatus } from './session-view.js';
export type { McpCallObserver, McpGatewayOptions, McpKeyView, McpRequestContext, McpToolCallEvent, McpToolCallOutcome } from './mcp-types.js';

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
  /** What the sessions' handlers read of this gateway (session-handlers.ts). */
  private readonly host: SessionHost = {
    servers: () => this.servers,
    connection: (session, server) => this.connection(session, server),
    warn: (message) => this.options.warn(message),
    observer: () => this.options.observer,
  };

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

  /**
   * The servers of a key's view with their tools (or why listing them failed): a session of its
   * own, opened for this and closed after (`GET /v1/mcp/servers`, the dashboard's MCP page).
   * @throws GatewayError `gateway_shutting_down` after {@link close}.
   */
  async serverStatuses(ctx: McpRequestContext): Promise<McpServerStatus[]> {
    if (this.closed) throw new GatewayError('gateway_shutting_down', 'the gateway is shutting down');
    const session = this.openSession(ctx);
    session.id = `status_${randomUUID()}`;
    try {
      return await serverStatuses(this.host, session);
    } finally {
      await this.endSession(session);
    }
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
    installHandlers(this.host, session);
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
    for (const s of targets) if (visibleServers(this.host, s).some((v) => v.id === serverId)) this.notify(s, kind);
  }

  private notify(session: GatewaySession, kind: ListKind): void {
    const send = kind === 'tools' ? session.server.sendToolListChanged() : kind === 'resources' ? session.server.sendResourceListChanged() : session.server.sendPromptListChanged();
    void send.catch(() => {});
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

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

