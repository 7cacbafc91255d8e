import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/**
 * An upstream MCP server for tests, built with the official SDK's `McpServer` over Streamable
 * HTTP (stateful, one SDK server per session) on 127.0.0.1 port 0, plus the legacy HTTP+SSE
 * transport (`GET /sse`, `POST /messages`). It counts what reaches it: every HTTP request's
 * headers, initializes, tool calls by name; `dropSessions()` forgets every session (the next
 * request with an old id gets the SDK's 404), `toolsChanged()` adds a tool and notifies.
 *
 * Tools: `echo {text}` → text; `add {a,b}` → the sum as text; `hang` never answers;
 * `big {bytes}` → a text of that many bytes; `fail` → an `isError` result;
 * `secret_error` → a JSON-RPC error whose message quotes the `authorization` header it got;
 * `progress {steps}` → progress notifications, then `done <steps>`; `wait {ms}` → answers after
 * ms unless cancelled (counted in `cancelled`).
 * Resources: `memo://<label>/readme` (text); prompt `greet {name}`.
 */
export interface McpUpstream {
  url: string;
  /** `http://127.0.0.1:PORT/sse` (legacy transport). */
  sseUrl: string;
  /** Headers of every HTTP request received, in order. */
  headers: IncomingHttpHeaders[];
  initializes: number;
  /** Tool calls that saw their request cancelled (`notifications/cancelled`). */
  cancelled: number;
  /** `tools/call` counts by tool name. */
  calls: Map<string, number>;
  /** Sessions open now. */
  sessionCount(): number;
  dropSessions(): void;
  /** Register one more tool (`extra_<n>`) in every session and send `notifications/tools/list_changed`. */
  toolsChanged(): void;
  close(): Promise<void>;
}

/** Start an upstream MCP server labelled `label` (its resource URIs and `echo` prefix say which it is). */
export async function startMcpUpstream(label: string, options: { jsonResponse?: boolean } = {}): Promise<McpUpstream> {
  const headers: IncomingHttpHeaders[] = [];
  const calls = new Map<string, number>();
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: McpServer }>();
  const sseSessions = new Map<string, { transport: SSEServerTransport; server: McpServer }>();
  const servers = new Set<McpServer>();
  let extra = 0;
  const count = (name: string) => calls.set(name, (calls.get(name) ?? 0) + 1);
  const state = { initializes: 0, cancelled: 0 };

  const build = (authorization: string | undefined): McpServer => {
    const server = new McpServer({ name: `upstream-${label}`, version: '1.0.0' }, { capabilities: { tools: { listChanged: true }, resources: {}, prompts: {} } });
    server.registerTool('echo', { description: `Echo the text back (${label})`, inputSchema: { text: z.string() } }, async ({ text }) => {
      count('echo');
      return { content: [{ type: 'text', text: `${label}:${text}` }] };
    });
    server.registerTool('add', { description: 'Add two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => {
      count('add');
      return { content: [{ type: 'text', text: String(a + b) }] };
    });
    server.registerTool('hang', { description: 'Never answers' }, async () => {
      count('hang');
      return new Promise(() => {});
    });
    server.registerTool('big', { description: 'A large text result', inputSchema: { bytes: z.number().int() } }, async ({ bytes }) => {
      count('big');
      return { content: [{ type: 'text', text: 'x'.repeat(bytes) }] };
    });
    server.registerTool('progress', { description: 'Reports progress, then answers', inputSchema: { steps: z.number().int() } }, async ({ steps }, extra) => {
      count('progress');
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps, message: `step ${i}` } });
        await new Promise((r) => setTimeout(r, 10));
      }
      return { content: [{ type: 'text', text: `done ${steps}` }] };
    });
    server.registerTool('wait', { description: 'Answers after ms, unless cancelled', inputSchema: { ms: z.number().int() } }, async ({ ms }, extra) => {
      count('wait');
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ content: [{ type: 'text', text: 'waited' }] }), ms);
        extra.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          state.cancelled++;
          resolve({ content: [{ type: 'text', text: 'cancelled' }] });
        });
      });
    });
    server.registerTool('fail', { description: 'A tool error' }, async () => {
      count('fail');
      return { content: [{ type: 'text', text: 'it failed' }], isError: true };
    });
    server.registerTool('secret_error', { description: 'Quotes its credentials in an error' }, async () => {
      count('secret_error');
      throw new Error(`upstream refused the credentials "${authorization ?? ''}"`);
    });
    for (let i = 1; i <= extra; i++) server.registerTool(`extra_${i}`, { description: 'Added later' }, async () => ({ content: [{ type: 'text', text: `extra ${i}` }] }));
    server.registerResource('readme', `memo://${label}/readme`, { mimeType: 'text/plain' }, async (uri) => ({ contents: [{ uri: uri.href, text: `readme of ${label}` }] }));
    server.registerPrompt('greet', { description: 'Greets', argsSchema: { name: z.string() } }, ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello ${name} from ${label}` } }] }));
    servers.add(server);
    return server;
  };

  const readBody = (req: IncomingMessage): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve(text === '' ? undefined : JSON.parse(text));
        } catch (err) {
          reject(err);
        }
      });
      req.on('error', reject);
    });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    headers.push(req.headers);
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/sse' && req.method === 'GET') {
      const transport = new SSEServerTransport('/messages', res);
      const server = build(req.headers.authorization);
      sseSessions.set(transport.sessionId, { transport, server });
      transport.onclose = () => sseSessions.delete(transport.sessionId);
      state.initializes++;
      await server.connect(transport);
      return;
    }
    if (url.pathname === '/messages' && req.method === 'POST') {
      const s = sseSessions.get(url.searchParams.get('sessionId') ?? '');
      if (!s) return void res.writeHead(404).end('unknown session');
      const body = await readBody(req);
      await s.transport.handlePostMessage(req, res, body);
      return;
    }
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    const id = req.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const s = sessions.get(id);
      if (!s) return void res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
      await s.transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) return void res.writeHead(400).end('no session');
    state.initializes++;
    const server = build(req.headers.authorization);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: options.jsonResponse ?? false,
      onsessioninitialized: (sid) => void sessions.set(sid, { transport, server }),
      onsessionclosed: (sid) => void sessions.delete(sid),
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };

  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    sseUrl: `http://127.0.0.1:${port}/sse`,
    headers,
    get initializes() {
      return state.initializes;
    },
    get cancelled() {
      return state.cancelled;
    },
    calls,
    sessionCount: () => sessions.size,
    dropSessions() {
      for (const s of sessions.values()) void s.server.close();
      sessions.clear();
    },
    toolsChanged() {
      extra++;
      const n = extra;
      for (const server of servers) {
        if (!server.isConnected()) continue;
        server.registerTool(`extra_${n}`, { description: 'Added later' }, async () => ({ content: [{ type: 'text', text: `extra ${n}` }] }));
      }
    },
    async close() {
      for (const s of servers) await s.close().catch(() => {});
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
