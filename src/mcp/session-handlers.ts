import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
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
} from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../config/schema.js';
import { GatewayError } from '../errors/gateway-error.js';
import { McpWireError, toMcpError } from './mcp-errors.js';
import { bytesOf, SEARCH_TOOL, SEARCH_TOOL_NAME, TOOL_CALL_ID_META, type GatewaySession, type McpToolCallEvent, type McpToolCallOutcome, type SessionHost } from './mcp-types.js';
import { clientName, resolveName, searchTools, visibleServers, visibleTools } from './session-view.js';
import { keyAllowsTool, serverHides } from './tool-patterns.js';
import type { UpstreamRequestExtra } from './upstream-connection.js';

/**
 * The MCP methods one gateway session serves (its SDK `Server`'s request handlers): tools,
 * prompts and resources aggregated over the session's view (session-view.ts), and `tools/call`
 * with the call observer around it (`admit` before, `ended` after every call, refusals included).
 */

/** The MCP methods of a session: tools, prompts and resources over the key's view, `tools/call` with the observer around it. */
export function installHandlers(host: SessionHost, session: GatewaySession): void {
  const { server } = session;
  const guarded = <A extends unknown[], R>(fn: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
    try {
      return await fn(...args);
    } catch (err) {
      if (!(err instanceof GatewayError) && !(err instanceof McpError) && !(err instanceof McpWireError)) host.warn(`MCP gateway: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
      throw toMcpError(err);
    }
  };

  server.setRequestHandler(ListToolsRequestSchema, guarded(async () => {
    const tools = await visibleTools(host, session);
    const max = session.key.maxTools;
    if (max === null || tools.length <= max) return { tools };
    return { tools: [...tools.slice(0, Math.max(0, max - 1)), SEARCH_TOOL] };
  }));

  server.setRequestHandler(CallToolRequestSchema, guarded(async (request, extra) => {
    const { name } = request.params;
    if (name === SEARCH_TOOL_NAME && session.key.maxTools !== null) return searchTools(host, session, request.params.arguments);
    // The client's progress token and tool-call id stay here: the upstream gets the SDK's own token, and its progress is relayed under the client's.
    const { progressToken, [TOOL_CALL_ID_META]: callId, ...meta } = request.params._meta ?? {};
    const event: McpToolCallEvent = {
      keyId: session.key.id, key: session.key, sessionId: session.id ?? '', requestId: session.requestId, callId: typeof callId === 'string' ? callId : undefined,
      server: '', tool: name, arguments: request.params.arguments, argumentBytes: bytesOf(request.params.arguments),
    };
    const started = performance.now();
    let target: { server: McpServerConfig; name: string };
    try {
      target = resolveName(host, session, name, 'tool');
      event.server = target.server.id;
      event.tool = target.name;
      const hidden = serverHides(target.server, target.name);
      if (hidden !== undefined) throw new GatewayError('mcp_tool_not_allowed', `tool "${name}" may not be called: ${hidden}`, { param: 'name' });
      if (!keyAllowsTool(session.key.allowedTools, target.server.id, target.name)) {
        throw new GatewayError('mcp_tool_not_allowed', `tool "${name}" may not be called with this key: it is not in the key's allowed_tools`, { param: 'name' });
      }
      await host.observer()?.admit?.(event);
    } catch (err) {
      observeEnd(host, event, started, 'refused', undefined, err);
      throw err;
    }
    const onprogress = progressToken === undefined ? undefined : (p: Progress) => void extra.sendNotification({ method: 'notifications/progress', params: { ...p, progressToken } }).catch(() => {});
    const params = { ...request.params, ...(request.params._meta === undefined ? {} : { _meta: meta }) };
    return callTool(host, session, target.server, target.name, params, { signal: extra.signal, ...(onprogress === undefined ? {} : { onprogress }) }, event, started);
  }));

  server.setRequestHandler(ListPromptsRequestSchema, guarded(async () => {
    const lists = await Promise.all(visibleServers(host, session).map(async (s) => {
      try {
        return (await host.connection(session, s).listPrompts()).map((p): Prompt => ({ ...p, name: clientName(session, s.id, p.name) }));
      } catch (err) {
        host.warn(`MCP server "${s.id}": prompts/list failed, its prompts are left out: ${err instanceof Error ? err.message : String(err)}`);
        return [];
      }
    }));
    return { prompts: lists.flat() };
  }));

  server.setRequestHandler(GetPromptRequestSchema, guarded(async (request) => {
    const target = resolveName(host, session, request.params.name, 'prompt');
    return host.connection(session, target.server).getPrompt(target.name, request.params.arguments);
  }));

  server.setRequestHandler(ListResourcesRequestSchema, guarded(async () => ({ resources: await listResources(host, session) })));

  server.setRequestHandler(ListResourceTemplatesRequestSchema, guarded(async () => {
    const lists = await Promise.all(visibleServers(host, session).map(async (s) => {
      try {
        return await host.connection(session, s).listResourceTemplates();
      } catch (err) {
        host.warn(`MCP server "${s.id}": resources/templates/list failed: ${err instanceof Error ? err.message : String(err)}`);
        return [] as ResourceTemplate[];
      }
    }));
    return { resourceTemplates: lists.flat() };
  }));

  server.setRequestHandler(ReadResourceRequestSchema, guarded(async (request) => {
    const { uri } = request.params;
    let owner = session.resourceOwners.get(uri);
    if (owner === undefined) {
      await listResources(host, session);
      owner = session.resourceOwners.get(uri);
    }
    const visible = visibleServers(host, session);
    const server = visible.find((s) => s.id === owner) ?? (visible.length === 1 ? visible[0] : undefined);
    if (server) return host.connection(session, server).readResource(uri);
    // A URI of a template (not listed): the servers with templates are asked in order.
    for (const s of visible) {
      const c = host.connection(session, s);
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
async function listResources(host: SessionHost, session: GatewaySession): Promise<Resource[]> {
  const lists = await Promise.all(visibleServers(host, session).map(async (s) => {
    try {
      const resources = await host.connection(session, s).listResources();
      for (const r of resources) if (!session.resourceOwners.has(r.uri)) session.resourceOwners.set(r.uri, s.id);
      return resources;
    } catch (err) {
      host.warn(`MCP server "${s.id}": resources/list failed, its resources are left out: ${err instanceof Error ? err.message : String(err)}`);
      return [];
    }
  }));
  return lists.flat();
}


/** Call an admitted tool upstream; the observer hears how it ended. */
async function callTool(host: SessionHost, session: GatewaySession, server: McpServerConfig, tool: string, params: { name: string; arguments?: Record<string, unknown> | undefined; _meta?: Record<string, unknown> | undefined }, extra: UpstreamRequestExtra, event: McpToolCallEvent, started: number): Promise<CallToolResult> {
  try {
    const result = await host.connection(session, server).callTool({ ...params, name: tool }, extra);
    observeEnd(host, event, started, result.isError === true ? 'tool_error' : 'ok', result);
    return result;
  } catch (err) {
    observeEnd(host, event, started, 'error', undefined, err);
    throw err;
  }
}


/** Tell the observer how a call ended (an observer that throws is logged, never fails the call). */
function observeEnd(host: SessionHost, event: McpToolCallEvent, started: number, status: McpToolCallOutcome['status'], result?: CallToolResult, err?: unknown): void {
  const ended = host.observer()?.ended;
  if (!ended) return;
  let error: McpToolCallOutcome['error'];
  if (err !== undefined) {
    const e = toMcpError(err);
    error = { code: (e.data as { code?: string } | undefined)?.code ?? e.code, message: e.message };
  }
  try {
    ended({ ...event, status, latencyMs: performance.now() - started, resultBytes: bytesOf(result), ...(result === undefined ? {} : { result }), ...(error === undefined ? {} : { error }) });
  } catch (e) {
    host.warn(`MCP gateway: the call observer failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}


/** Whether a URI fits an RFC 6570 template at its simplest (`{var}` = one path segment, `{+var}` = anything). */
function templateMatches(template: string, uri: string): boolean {
  const re = template.split(/(\{[^}]*\})/).map((part) => (part.startsWith('{') ? (part.startsWith('{+') ? '.+' : '[^/]+') : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('');
  return new RegExp(`^${re}$`).test(uri);
}
