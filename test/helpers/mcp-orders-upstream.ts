import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** One `tools/call` that reached the upstream: the tool's own name and its arguments. */
export interface RecordedToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/**
 * A small upstream MCP server for the agent-client and Responses `mcp` tool tests, built with the
 * official SDK's `McpServer` over a stateless Streamable HTTP transport (a new SDK server per
 * HTTP request, JSON answers) on 127.0.0.1 port 0. It records every tool call with its
 * arguments and the headers of every HTTP request.
 *
 * Tools: `lookup_order {order_id}` → `order <id>: shipped, 3 parcels, tracking <TRACKING>`;
 * `cancel_order {order_id}` → `order <id> cancelled`.
 */
export interface OrdersUpstream {
  url: string;
  calls: RecordedToolCall[];
  headers: IncomingHttpHeaders[];
  close(): Promise<void>;
}

/** The tracking code `lookup_order` answers with (a test asserts the model's next turn saw it). */
export const TRACKING = 'TRK-88412-QX';

function build(calls: RecordedToolCall[]): McpServer {
  const server = new McpServer({ name: 'orders', version: '1.0.0' });
  server.registerTool('lookup_order', { description: 'Look up an order by its id: status, parcels and tracking code', inputSchema: { order_id: z.string() } }, async (args) => {
    calls.push({ name: 'lookup_order', arguments: { ...args } });
    return { content: [{ type: 'text', text: `order ${args.order_id}: shipped, 3 parcels, tracking ${TRACKING}` }] };
  });
  server.registerTool('cancel_order', { description: 'Cancel an order', inputSchema: { order_id: z.string() } }, async (args) => {
    calls.push({ name: 'cancel_order', arguments: { ...args } });
    return { content: [{ type: 'text', text: `order ${args.order_id} cancelled` }] };
  });
  return server;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

/** Start the orders upstream. */
export async function startOrdersUpstream(): Promise<OrdersUpstream> {
  const calls: RecordedToolCall[] = [];
  const headers: IncomingHttpHeaders[] = [];
  const http: HttpServer = createServer((req, res) => {
    headers.push(req.headers);
    if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
    void (async () => {
      const body = await readJson(req);
      const server = build(calls);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    calls,
    headers,
    async close() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
