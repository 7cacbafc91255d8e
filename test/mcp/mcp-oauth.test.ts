/**
 * Credentials stay in the gateway (issue 22 item 3): an upstream MCP server protected by OAuth
 * 2.1 is reached with the client credentials of `mcp_servers[].oauth`. The test runs a fake
 * authorization server (RFC 8414 metadata, a token endpoint that checks HTTP Basic client
 * credentials and issues short-lived tokens) and an MCP server (the official SDK's `McpServer`,
 * stateless Streamable HTTP) that answers 401 with its protected resource metadata (RFC 9728)
 * unless it gets a live token. The client's gateway key never reaches either; an expired token
 * is replaced on the server's 401; a wrong secret is an MCP error that does not quote it.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { parseConfig, ConfigError } from '../../src/config/load.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const CLIENT_ID = 'opinference-gateway';
const CLIENT_SECRET = 'cs-9f8e7d6c5b4a-top-secret';

const listen = async (handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; origin: string }> => {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
};
const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

/** The fake authorization server: tokens by value with their expiry (ms since the epoch). */
interface AuthServer {
  origin: string;
  tokens: Map<string, number>;
  /** Token requests: the grant, the client id and whether the secret was right. */
  grants: { grant: string | null; clientId: string; secretOk: boolean; scope: string | null }[];
  /** Lifetime of the next tokens, in seconds. */
  lifetime: number;
  close(): Promise<void>;
}

async function startAuthServer(): Promise<AuthServer> {
  const state = { tokens: new Map<string, number>(), grants: [] as AuthServer['grants'], lifetime: 3600, n: 0 };
  let origin = '';
  const { server, origin: o } = await listen(async (req, res) => {
    const url = new URL(req.url ?? '/', origin);
    if (req.method === 'GET' && url.pathname === '/.well-known/oauth-authorization-server') {
      return json(res, 200, { issuer: origin, authorization_endpoint: `${origin}/authorize`, token_endpoint: `${origin}/token`, grant_types_supported: ['client_credentials'], token_endpoint_auth_methods_supported: ['client_secret_basic'], response_types_supported: ['token'] });
    }
    if (req.method === 'POST' && url.pathname === '/token') {
      const form = new URLSearchParams(await readBody(req));
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const [id, secret] = basic ? Buffer.from(basic, 'base64').toString('utf8').split(':').map(decodeURIComponent) : ['', ''];
      const secretOk = id === CLIENT_ID && secret === CLIENT_SECRET;
      state.grants.push({ grant: form.get('grant_type'), clientId: id ?? '', secretOk, scope: form.get('scope') });
      if (!secretOk || form.get('grant_type') !== 'client_credentials') return json(res, 401, { error: 'invalid_client', error_description: 'bad client credentials' });
      const token = `at-${++state.n}-${Math.random().toString(36).slice(2, 10)}`;
      state.tokens.set(token, Date.now() + state.lifetime * 1000);
      return json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: state.lifetime });
    }
    json(res, 404, { error: 'not_found' });
  });
  origin = o;
  return {
    origin,
    tokens: state.tokens,
    grants: state.grants,
    get lifetime() {
      return state.lifetime;
    },
    set lifetime(s: number) {
      state.lifetime = s;
    },
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** The protected MCP server: its request headers, and the tool calls it ran with the token each saw. */
interface ProtectedMcp {
  url: string;
  headers: IncomingHttpHeaders[];
  calls: { tool: string; token: string }[];
  close(): Promise<void>;
}

async function startProtectedMcp(auth: AuthServer): Promise<ProtectedMcp> {
  const headers: IncomingHttpHeaders[] = [];
  const calls: ProtectedMcp['calls'] = [];
  let origin = '';
  const { server, origin: o } = await listen(async (req, res) => {
    headers.push(req.headers);
    const url = new URL(req.url ?? '/', origin);
    if (req.method === 'GET' && url.pathname.startsWith('/.well-known/oauth-protected-resource')) {
      return json(res, 200, { resource: `${origin}/mcp`, authorization_servers: [auth.origin], bearer_methods_supported: ['header'] });
    }
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const expires = auth.tokens.get(token);
    if (expires === undefined || expires <= Date.now()) {
      return json(res, 401, { error: 'invalid_token' }, { 'www-authenticate': `Bearer error="invalid_token", resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"` });
    }
    const body = req.method === 'POST' ? JSON.parse((await readBody(req)) || 'null') : undefined;
    // Stateless: a server and transport per request.
    const mcp = new McpServer({ name: 'protected', version: '1.0.0' });
    mcp.registerTool('whoami', { description: 'Says which token it saw', inputSchema: { note: z.string().optional() } }, async () => {
      calls.push({ tool: 'whoami', token });
      return { content: [{ type: 'text', text: `ok with ${token.slice(0, 5)}` }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close().then(() => mcp.close()));
    await mcp.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  origin = o;
  return { url: `${origin}/mcp`, headers, calls, close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) };
}

const textOf = (r: unknown): string => ((r as CallToolResult).content[0] as { text: string }).text;

describe('an OAuth-protected upstream MCP server (client credentials)', () => {
  let auth: AuthServer;
  let upstream: ProtectedMcp;
  let gw: TestGateway;
  let client: Client;
  let gatewayKey: string;

  before(async () => {
    auth = await startAuthServer();
    upstream = await startProtectedMcp(auth);
    gw = await startGateway({
      mcp_servers: [
        { id: 'secure', transport: 'streamable_http', url: upstream.url, oauth: { issuer: auth.origin, client_id: CLIENT_ID, client_secret: CLIENT_SECRET, scope: 'tools.read' } },
        { id: 'wrong', transport: 'streamable_http', url: upstream.url, oauth: { issuer: auth.origin, client_id: CLIENT_ID, client_secret: 'cs-not-the-right-one-123' } },
      ],
    });
    gatewayKey = (await gw.createKey('oauth')).secret;
    client = new Client({ name: 'oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.origin}/mcp/secure`), { requestInit: { headers: { authorization: `Bearer ${gatewayKey}` } } }));
  });
  after(async () => {
    await client?.close();
    await gw?.close();
    await upstream?.close();
    await auth?.close();
  });

  test('the gateway gets a token with its client credentials and calls the tool with it; the client\'s key goes nowhere upstream', async () => {
    const tools = await client.listTools();
    // One server's own endpoint: its tools by their own names.
    assert.deepEqual(tools.tools.map((t) => t.name), ['whoami']);
    const r = await client.callTool({ name: 'whoami', arguments: {} });
    const token = upstream.calls.at(-1)!.token;
    assert.match(token, /^at-\d+-/);
    assert.equal(textOf(r), `ok with ${token.slice(0, 5)}`);
    const okGrants = auth.grants.filter((g) => g.secretOk);
    assert.ok(okGrants.length >= 1);
    assert.deepEqual(okGrants[0], { grant: 'client_credentials', clientId: CLIENT_ID, secretOk: true, scope: 'tools.read' });
    assert.ok(upstream.headers.every((h) => !String(h.authorization ?? '').includes(gatewayKey)), 'the gateway key reached the MCP server');
  });

  test('an expired token is replaced on the server\'s 401 and the call goes through', async () => {
    auth.lifetime = 1;
    // Expire every token issued so far: the next call is refused once, then a new token is asked for.
    for (const t of auth.tokens.keys()) auth.tokens.set(t, Date.now() - 1);
    const before = auth.grants.length;
    const r = await client.callTool({ name: 'whoami', arguments: { note: 'after expiry' } });
    const token = upstream.calls.at(-1)!.token;
    assert.equal(textOf(r), `ok with ${token.slice(0, 5)}`);
    assert.equal(auth.grants.length, before + 1);
    assert.ok((auth.tokens.get(token) ?? 0) > Date.now() - 2000, 'the call used the newly issued token');
    auth.lifetime = 3600;
  });

  test('wrong client credentials: an MCP error naming the server, never quoting the secret', async () => {
    const c = new Client({ name: 'oauth-wrong', version: '1.0.0' });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${gw.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${gatewayKey}` } } }));
    try {
      let failure: unknown;
      try {
        await c.callTool({ name: 'wrong__whoami', arguments: {} });
      } catch (err) {
        failure = err;
      }
      assert.ok(failure instanceof McpError, String(failure));
      assert.match(failure.message, /MCP server "wrong"/);
      assert.ok(!failure.message.includes('cs-not-the-right-one-123'));
      assert.ok(auth.grants.some((g) => !g.secretOk), 'the wrong secret was tried at the token endpoint');
      // The good server's tools are still listed beside it.
      assert.ok((await c.listTools()).tools.some((t) => t.name === 'secure__whoami'));
    } finally {
      await c.close();
    }
  });

  test('config: oauth needs its issuer, and is read only with the secrets', () => {
    const base = { id: 's', transport: 'streamable_http', url: upstream.url };
    assert.throws(() => parseConfig({ mcp_servers: [{ ...base, oauth: { client_id: 'a', client_secret: 'b' } }] }, 'test'), (err: unknown) => err instanceof ConfigError && err.issues.some((i) => i.startsWith('mcp_servers[0].oauth.issuer: ')));
    const withoutSecrets = parseConfig({ mcp_servers: [{ ...base, oauth: { issuer: auth.origin, client_id: 'a', client_secret: '${UNSET_MCP_SECRET}' } }] }, 'test', {}, { secrets: false });
    assert.equal(withoutSecrets.mcp_servers[0]!.transport === 'stdio' ? 'stdio' : withoutSecrets.mcp_servers[0]!.oauth, undefined);
  });
});
