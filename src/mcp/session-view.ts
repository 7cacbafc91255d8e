import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../config/schema.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { GatewaySession, SessionHost } from './mcp-types.js';
import { keyAllowsTool, keySeesServer, namespaced, serverHides, splitNamespaced } from './tool-patterns.js';

/**
 * A session's view of the configured servers: which servers and tools its key and endpoint see
 * (`allowed_tools`, the servers' allow and deny lists, `/mcp/{server}`), the names its client
 * uses (`server__name` on `/mcp`), and the gateway's `search_tools` over that view.
 */

/** The servers a session may reach: the endpoint's one, or all; those whose tools the key names at all. */
export function visibleServers(host: SessionHost, session: GatewaySession): McpServerConfig[] {
  return host.servers().filter((s) => (session.only === undefined || s.id === session.only) && keySeesServer(session.key.allowedTools, s.id));
}


/** The name a client sees for a server's tool or prompt on this session's endpoint. */
export function clientName(session: GatewaySession, serverId: string, name: string): string {
  return session.only === undefined ? namespaced(serverId, name) : name;
}


/**
 * The server and upstream name a client's tool or prompt name means on this session's endpoint
 * (whether the key may use it is checked apart, so a refusal can say why).
 * @throws GatewayError `mcp_unknown_tool` for a name of no configured server (of this endpoint);
 * `mcp_tool_not_allowed` for a prompt of a server the key's view leaves out.
 */
export function resolveName(host: SessionHost, session: GatewaySession, name: string, what: 'tool' | 'prompt'): { server: McpServerConfig; name: string } {
  const split = session.only === undefined ? splitNamespaced(name) : { serverId: session.only, name };
  const server = split === undefined ? undefined : host.servers().find((s) => s.id === split.serverId && (session.only === undefined || s.id === session.only));
  if (!split || !server) {
    const hint = session.only === undefined ? ` (names are <server>__<${what}>; servers: ${visibleServers(host, session).map((s) => s.id).join(', ') || 'none'})` : '';
    throw new GatewayError('mcp_unknown_tool', `no MCP ${what} "${name}" on this gateway${hint}`, { param: 'name' });
  }
  if (what === 'prompt' && !keySeesServer(session.key.allowedTools, server.id)) {
    throw new GatewayError('mcp_tool_not_allowed', `prompt "${name}" may not be used with this key: its allowed_tools name nothing of MCP server "${server.id}"`, { param: 'name' });
  }
  return { server, name: split.name };
}


/** Every tool the session's key may see, in server order (a server that fails is skipped and logged). */
export async function visibleTools(host: SessionHost, session: GatewaySession): Promise<Tool[]> {
  const perServer = await Promise.all(
    visibleServers(host, session).map(async (server) => {
      try {
        const tools = await host.connection(session, server).listTools();
        return tools
          .filter((t) => serverHides(server, t.name) === undefined && keyAllowsTool(session.key.allowedTools, server.id, t.name))
          .map((t) => ({ ...t, name: clientName(session, server.id, t.name) }));
      } catch (err) {
        host.warn(`MCP server "${server.id}": tools/list failed, its tools are left out: ${err instanceof Error ? err.message : String(err)}`);
        return [];
      }
    }),
  );
  return perServer.flat();
}


/** The gateway's `search_tools`: tools of the key's whole view whose name or description holds the query's words. */
export async function searchTools(host: SessionHost, session: GatewaySession, args: Record<string, unknown> | undefined): Promise<CallToolResult> {
  const query = typeof args?.query === 'string' ? args.query : '';
  const limit = typeof args?.limit === 'number' && Number.isInteger(args.limit) ? Math.min(50, Math.max(1, args.limit)) : 10;
  const words = query.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
  if (words.length === 0) return { content: [{ type: 'text', text: 'give a query: words to look for in tool names and descriptions' }], isError: true };
  const scored = (await visibleTools(host, session))
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

/** One server of a key's view as `GET /v1/mcp/servers` shows it: its tools (the client's names), or why they could not be listed. */
export interface McpServerStatus {
  id: string;
  transport: McpServerConfig['transport'];
  /** The tools the key may use, as its client names them; null when the list failed. */
  tools: string[] | null;
  /** Why `tools/list` failed (scrubbed of the server's secrets), or null. */
  error: string | null;
  /** How long `tools/list` took, in ms (a session opened for it included). */
  latency_ms: number;
}

/** Ask every server of the session's view for its tools, each on its own (one failing server does not hide the others). */
export async function serverStatuses(host: SessionHost, session: GatewaySession): Promise<McpServerStatus[]> {
  return Promise.all(
    visibleServers(host, session).map(async (server): Promise<McpServerStatus> => {
      const started = performance.now();
      try {
        const tools = (await host.connection(session, server).listTools())
          .filter((t) => serverHides(server, t.name) === undefined && keyAllowsTool(session.key.allowedTools, server.id, t.name))
          .map((t) => clientName(session, server.id, t.name));
        return { id: server.id, transport: server.transport, tools, error: null, latency_ms: Math.round(performance.now() - started) };
      } catch (err) {
        return { id: server.id, transport: server.transport, tools: null, error: err instanceof Error ? err.message : String(err), latency_ms: Math.round(performance.now() - started) };
      }
    }),
  );
}
