import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../../errors/gateway-error.js';
import { mcpKeyView } from '../../mcp/key-view.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';

/**
 * The `Origin` check the Streamable HTTP transport requires (DNS rebinding): a request with an
 * `Origin` is served only when it is the gateway's own (same host as `Host`) or listed in
 * `server.cors.allowed_origins` (`*` allows any). Requests without one (CLI agents, SDKs) pass.
 * @throws GatewayError `mcp_origin_not_allowed` (403).
 * @see https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#security-warning
 */
function checkOrigin(req: FastifyRequest, allowed: readonly string[]): void {
  const origin = req.headers.origin;
  if (origin === undefined || allowed.includes('*') || allowed.includes(origin)) return;
  let host: string | undefined;
  try {
    host = new URL(origin).host;
  } catch {
    host = undefined;
  }
  if (host !== undefined && host === req.headers.host) return;
  throw new GatewayError('mcp_origin_not_allowed', `Origin ${JSON.stringify(origin.slice(0, 200))} may not use the MCP endpoint: list it in server.cors.allowed_origins`, { param: 'origin' });
}

/**
 * `POST`/`GET`/`DELETE /mcp` (every configured MCP server, names `server__tool`) and
 * `/mcp/{server}` (one server, its own names): the Streamable HTTP transport of the MCP
 * gateway (mcp/mcp-gateway.ts), authenticated with gateway keys like every route (route-auth.ts;
 * a missing or invalid key is a 401 with a JSON-RPC error body and `WWW-Authenticate: Bearer`,
 * send-error.ts). The reply is handed to the SDK's transport (`reply.hijack()`): it writes JSON
 * or an event stream itself. The legacy HTTP+SSE transport (revision 2024-11-05) beside it:
 * `GET /mcp/sse` + `POST /mcp/messages?sessionId=…`, and `/mcp/{server}/sse` + `…/messages`.
 * @see https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http
 * @see https://modelcontextprotocol.io/specification/2024-11-05/basic/transports#http-with-sse
 */
export function registerMcpRoutes(app: FastifyInstance, rt: () => GatewayRuntime): void {
  const serve = async (req: FastifyRequest, reply: FastifyReply, only: string | undefined) => {
    checkOrigin(req, rt().config.server.cors?.allowed_origins ?? []);
    const mcp = rt().mcp;
    if (only !== undefined && !mcp.hasServer(only)) throw new GatewayError('mcp_unknown_tool', `no MCP server "${only}" is configured (servers: ${mcp.serverIds().join(', ') || 'none'})`, { param: 'server' });
    reply.hijack();
    try {
      await mcp.handle(req.raw, reply.raw, req.body, { key: mcpKeyView(req.apiKey, rt().config.retention), ...(only === undefined ? {} : { only }) });
    } catch (err) {
      req.log.error({ err }, 'MCP request failed');
      if (!reply.raw.headersSent) reply.raw.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'internal error in the MCP gateway', data: { code: 'internal_error', request_id: req.id } }, id: null }));
      else reply.raw.end();
    }
  };
  /** The legacy HTTP+SSE transport: `GET …/sse` opens the stream, `POST …/messages?sessionId=` carries the client's messages. */
  const legacy = async (req: FastifyRequest, reply: FastifyReply, only: string | undefined, kind: 'stream' | 'message') => {
    checkOrigin(req, rt().config.server.cors?.allowed_origins ?? []);
    const mcp = rt().mcp;
    if (only !== undefined && !mcp.hasServer(only)) throw new GatewayError('mcp_unknown_tool', `no MCP server "${only}" is configured (servers: ${mcp.serverIds().join(', ') || 'none'})`, { param: 'server' });
    const ctx = { key: mcpKeyView(req.apiKey, rt().config.retention), ...(only === undefined ? {} : { only }) };
    reply.hijack();
    try {
      if (kind === 'stream') await mcp.handleLegacyStream(reply.raw, only === undefined ? '/mcp/messages' : `/mcp/${only}/messages`, ctx);
      else await mcp.handleLegacyMessage(req.raw, reply.raw, req.body, (req.query as { sessionId?: string }).sessionId, ctx);
    } catch (err) {
      req.log.error({ err }, 'MCP request failed');
      if (!reply.raw.headersSent) reply.raw.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'internal error in the MCP gateway', data: { code: 'internal_error', request_id: req.id } }, id: null }));
      else reply.raw.end();
    }
  };
  app.get('/mcp/sse', { config: { ownsPath: true } }, (req, reply) => legacy(req, reply, undefined, 'stream'));
  app.post('/mcp/messages', { config: { ownsPath: true } }, (req, reply) => legacy(req, reply, undefined, 'message'));
  app.get<{ Params: { server: string } }>('/mcp/:server/sse', (req, reply) => legacy(req, reply, req.params.server, 'stream'));
  app.post<{ Params: { server: string } }>('/mcp/:server/messages', (req, reply) => legacy(req, reply, req.params.server, 'message'));

  const methods = ['GET', 'POST', 'DELETE'] as const;
  app.route({ method: [...methods], url: '/mcp', config: { ownsPath: true }, handler: (req, reply) => serve(req, reply, undefined) });
  app.route<{ Params: { server: string } }>({ method: [...methods], url: '/mcp/:server', handler: (req, reply) => serve(req, reply, req.params.server) });
}
