import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { parseConfig } from '../../src/config/load.js';
import { createKey } from '../../src/store/keys.js';
import type { KeySettings } from '../../src/store/key-settings.js';

const STDIO_FIXTURE = fileURLToPath(new URL('../fixtures/mcp-stdio-server.mjs', import.meta.url));
const WEATHER_TOKEN = 'wx-token-6f1d2c9a8b7e';

let gw: TestGateway;
let weather: McpUpstream;
let files: McpUpstream;
let legacy: McpUpstream;
const clients: Client[] = [];

/** An SDK client connected to the gateway's `/mcp` (or `/mcp/{server}`) with a gateway key. */
async function connect(secret: string, path = '/mcp'): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.origin}${path}`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
  clients.push(client);
  return client;
}

async function keyWith(settings: Partial<KeySettings>): Promise<string> {
  return (await createKey(gw.store.db, 'mcp-test', null, settings)).secret;
}

const textOf = (r: unknown): string => ((r as CallToolResult).content[0] as { text: string }).text;

/** The McpError a call rejects with. */
async function mcpError(p: Promise<unknown>): Promise<McpError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof McpError, `expected an McpError, got ${String(err)}`);
    return err;
  }
  assert.fail('the call succeeded');
}

before(async () => {
  weather = await startMcpUpstream('weather');
  files = await startMcpUpstream('files', { jsonResponse: true });
  legacy = await startMcpUpstream('legacy');
  process.env.MCP_TEST_WEATHER_TOKEN = WEATHER_TOKEN;
  gw = await startGateway({
    mcp_servers: [
      { id: 'weather', transport: 'streamable_http', url: weather.url, headers: { Authorization: 'Bearer ${MCP_TEST_WEATHER_TOKEN}' }, denied_tools: ['fail'], timeout_ms: 800, max_result_bytes: 64 * 1024 },
      { id: 'files', transport: 'streamable_http', url: files.url, allowed_tools: ['echo', 'add', 'fail'] },
      { id: 'local', transport: 'stdio', command: process.execPath, args: [STDIO_FIXTURE], env: { MCP_FIXTURE_SECRET: 'stdio-secret-value' }, max_result_bytes: 4096 },
      { id: 'legacy', transport: 'sse', url: legacy.sseUrl },
    ],
  });
});

after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await gw?.close();
  await weather?.close();
  await files?.close();
  await legacy?.close();
  delete process.env.MCP_TEST_WEATHER_TOKEN;
});

describe('MCP gateway over Streamable HTTP (SDK client)', () => {
  test('tools/list aggregates every server, namespaced server__tool, with the servers\' allow and deny lists applied', async () => {
    const client = await connect(await gw.createKey().then((k) => k.secret));
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(names.filter((n) => n.startsWith('weather__')), ['weather__add', 'weather__big', 'weather__echo', 'weather__hang', 'weather__progress', 'weather__secret_error', 'weather__wait']);
    assert.deepEqual(names.filter((n) => n.startsWith('files__')), ['files__add', 'files__echo', 'files__fail']);
    assert.deepEqual(names.filter((n) => n.startsWith('local__')), ['local__big', 'local__crash', 'local__echo', 'local__env', 'local__pid']);
    assert.ok(names.includes('legacy__echo'), 'the SSE upstream is listed');
    assert.equal(client.getServerVersion()?.name, 'opinference');
  });

  test('tools/call reaches the right upstream with its configured header; the gateway key never goes upstream', async () => {
    const { secret } = await gw.createKey();
    const client = await connect(secret);
    const before = weather.calls.get('echo') ?? 0;
    assert.equal(textOf(await client.callTool({ name: 'weather__echo', arguments: { text: 'hi' } })), 'weather:hi');
    assert.equal(textOf(await client.callTool({ name: 'files__add', arguments: { a: 2, b: 3 } })), '5');
    assert.equal(textOf(await client.callTool({ name: 'legacy__echo', arguments: { text: 'old' } })), 'legacy:old');
    assert.equal(weather.calls.get('echo'), before + 1);
    assert.ok(weather.headers.length > 0);
    for (const h of weather.headers) assert.equal(h.authorization, `Bearer ${WEATHER_TOKEN}`);
    for (const up of [weather, files, legacy]) {
      for (const h of up.headers) assert.ok(!JSON.stringify(h).includes(secret), 'the client key reached an upstream');
    }
    assert.equal(files.headers.some((h) => h.authorization !== undefined), false, 'files has no configured header and gets none');
  });

  test('two keys see different tool views, and a call outside the view is refused naming why, without reaching the upstream', async () => {
    const a = await connect(await keyWith({ allowed_tools: ['weather'] }));
    const b = await connect(await keyWith({ allowed_tools: ['files__echo', 'local__e*'] }));
    const namesA = (await a.listTools()).tools.map((t) => t.name).sort();
    const namesB = (await b.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(namesA, ['weather__add', 'weather__big', 'weather__echo', 'weather__hang', 'weather__progress', 'weather__secret_error', 'weather__wait']);
    assert.deepEqual(namesB, ['files__echo', 'local__echo', 'local__env']);
    const before = weather.calls.get('add') ?? 0;
    const err = await mcpError(b.callTool({ name: 'weather__add', arguments: { a: 1, b: 1 } }));
    assert.equal(err.code, -32602);
    assert.match(err.message, /not in the key's allowed_tools/);
    assert.deepEqual(err.data, { code: 'mcp_tool_not_allowed', param: 'name' });
    assert.equal(weather.calls.get('add') ?? 0, before, 'nothing was sent upstream');
    // A tool the server's denied_tools hides is refused for every key, naming the config.
    const denied = await mcpError(a.callTool({ name: 'weather__fail' }));
    assert.equal(denied.code, -32602);
    assert.match(denied.message, /denied_tools pattern "fail"/);
    // Resources and prompts follow the servers a key names.
    assert.deepEqual((await b.listPrompts()).prompts.map((p) => p.name).sort(), ['files__greet']);
    const prompt = await mcpError(b.getPrompt({ name: 'weather__greet', arguments: { name: 'x' } }));
    assert.equal((prompt.data as { code: string }).code, 'mcp_tool_not_allowed');
    assert.equal(prompt.message, 'MCP error -32602: prompt "weather__greet" may not be used with this key: its allowed_tools name nothing of MCP server "weather"');
    const unknown = await mcpError(a.callTool({ name: 'nosuch__tool' }));
    assert.equal((unknown.data as { code: string }).code, 'mcp_unknown_tool');
  });

  test('allowed_tools and max_tools are set through the key API; a PATCH sends list_changed and changes the view of an open session', async () => {
    const admin = (method: string, path: string, body?: unknown) =>
      fetch(`${gw.origin}/v1${path}`, { method, headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const created = await admin('POST', '/keys', { name: 'tools-key', allowed_tools: ['files__echo'], max_tools: 5 });
    assert.equal(created.status, 201);
    const body = (await created.json()) as { key: string; data: { id: string; allowed_tools: string[]; max_tools: number | null } };
    assert.deepEqual([body.data.allowed_tools, body.data.max_tools], [['files__echo'], 5]);
    const client = await connect(body.key);
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['files__echo']);
    const changed = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
    await new Promise((r) => setTimeout(r, 200));
    const patched = await admin('PATCH', `/keys/${body.data.id}`, { allowed_tools: ['weather__add', 'files__add'] });
    assert.equal(patched.status, 200);
    await Promise.race([changed, new Promise((_, reject) => setTimeout(() => reject(new Error('no list_changed within 5 s')), 5000))]);
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['weather__add', 'files__add']);
    const bad = await admin('PATCH', `/keys/${body.data.id}`, { allowed_tools: ['bad pattern!'] });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { param: string } }).error.param, 'allowed_tools[0]');
  });

  test('max_tools caps the list with search_tools, which finds the rest', async () => {
    const client = await connect(await keyWith({ allowed_tools: ['weather', 'files'], max_tools: 3 }));
    const tools = (await client.listTools()).tools;
    assert.equal(tools.length, 3);
    assert.equal(tools[2]!.name, 'search_tools');
    const found = await client.callTool({ name: 'search_tools', arguments: { query: 'add numbers' } });
    const names = (found.structuredContent as { tools: { name: string }[] }).tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['files__add', 'weather__add']);
    // A tool found that way is called like any other.
    assert.equal(textOf(await client.callTool({ name: 'files__add', arguments: { a: 40, b: 2 } })), '42');
  });

  test('upstream progress reaches the client under its own token; a client cancel cancels the upstream call', async () => {
    const client = await connect((await gw.createKey()).secret);
    const seen: { progress: number; total?: number; message?: string }[] = [];
    const result = await client.callTool({ name: 'weather__progress', arguments: { steps: 3 } }, undefined, { onprogress: (p) => seen.push(p) });
    assert.equal(textOf(result), 'done 3');
    assert.deepEqual(seen.map((p) => [p.progress, p.total, p.message]), [[1, 3, 'step 1'], [2, 3, 'step 2'], [3, 3, 'step 3']]);
    const before = weather.cancelled;
    const controller = new AbortController();
    const call = client.callTool({ name: 'weather__wait', arguments: { ms: 10_000 } }, undefined, { signal: controller.signal });
    await new Promise((r) => setTimeout(r, 200));
    controller.abort();
    await assert.rejects(call);
    const deadline = Date.now() + 3000;
    while (weather.cancelled === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(weather.cancelled, before + 1, 'the upstream saw notifications/cancelled');
  });

  test('a hanging tool is an MCP timeout error within the server\'s timeout_ms, and the session keeps working', async () => {
    const client = await connect((await gw.createKey()).secret);
    const started = Date.now();
    const err = await mcpError(client.callTool({ name: 'weather__hang' }));
    const ms = Date.now() - started;
    assert.equal(err.code, -32001);
    assert.deepEqual(err.data, { code: 'mcp_upstream_timeout' });
    assert.match(err.message, /timeout_ms \(800 ms\)/);
    assert.ok(ms >= 750 && ms < 5000, `answered after ${ms} ms`);
    assert.equal(textOf(await client.callTool({ name: 'weather__echo', arguments: { text: 'after' } })), 'weather:after');
  });

  test('a result over max_result_bytes is refused with an MCP error (HTTP and stdio), a smaller one passes', async () => {
    const client = await connect((await gw.createKey()).secret);
    const err = await mcpError(client.callTool({ name: 'weather__big', arguments: { bytes: 5 * 1024 * 1024 } }));
    assert.equal(err.code, -32603);
    assert.deepEqual(err.data, { code: 'mcp_result_too_large' });
    assert.match(err.message, /max_result_bytes \(65536 bytes\)/);
    assert.equal(textOf(await client.callTool({ name: 'weather__big', arguments: { bytes: 1000 } })).length, 1000);
    const viaStdio = await mcpError(client.callTool({ name: 'local__big', arguments: { bytes: 100_000 } }));
    assert.deepEqual(viaStdio.data, { code: 'mcp_result_too_large' });
  });

  test('an upstream that drops its session is re-initialised and the call answered, not surfaced as broken', async () => {
    const client = await connect((await gw.createKey()).secret);
    assert.equal(textOf(await client.callTool({ name: 'weather__echo', arguments: { text: 'one' } })), 'weather:one');
    const inits = weather.initializes;
    weather.dropSessions();
    assert.equal(textOf(await client.callTool({ name: 'weather__echo', arguments: { text: 'two' } })), 'weather:two');
    assert.equal(weather.initializes, inits + 1, 'one new upstream session');
  });

  test('a stdio server that exits is an MCP error, and the next call starts a new process; its environment is only the configured one', async () => {
    const client = await connect((await gw.createKey()).secret);
    const pid = textOf(await client.callTool({ name: 'local__pid' }));
    assert.match(pid, /^\d+$/);
    const env = JSON.parse(textOf(await client.callTool({ name: 'local__env' }))) as { secret: string | null; leaked: string | null };
    assert.deepEqual(env, { secret: 'stdio-secret-value', leaked: null });
    const err = await mcpError(client.callTool({ name: 'local__crash' }));
    assert.deepEqual(err.data, { code: 'mcp_upstream_unavailable' });
    assert.match(err.message, /its process exited/);
    const next = textOf(await client.callTool({ name: 'local__pid' }));
    assert.match(next, /^\d+$/);
    assert.notEqual(next, pid, 'a new child process');
  });

  test('upstream error text is scrubbed of the server\'s configured header secrets', async () => {
    const client = await connect((await gw.createKey()).secret);
    const result = (await client.callTool({ name: 'weather__secret_error' })) as CallToolResult;
    assert.equal(result.isError, true);
    const text = textOf(result);
    assert.ok(!text.includes(WEATHER_TOKEN), `the token leaked: ${text}`);
    assert.match(text, /\[redacted\]/);
  });

  test('an upstream tools/list_changed reaches the connected client, and the new tool is listed', async () => {
    const client = await connect(await keyWith({ allowed_tools: ['weather'] }));
    await client.listTools();
    const changed = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
    // Give the gateway's and the upstream's GET streams a moment to open.
    await new Promise((r) => setTimeout(r, 200));
    weather.toolsChanged();
    await Promise.race([changed, new Promise((_, reject) => setTimeout(() => reject(new Error('no list_changed within 5 s')), 5000))]);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.some((n) => /^weather__extra_\d+$/.test(n)), names.join(', '));
  });

  test('resources keep their URIs and are read from the server that listed them; prompts are namespaced', async () => {
    const client = await connect((await gw.createKey()).secret);
    const uris = (await client.listResources()).resources.map((r) => r.uri).sort();
    assert.deepEqual(uris.filter((u) => u.startsWith('memo://')), ['memo://files/readme', 'memo://legacy/readme', 'memo://weather/readme']);
    const read = await client.readResource({ uri: 'memo://files/readme' });
    assert.equal((read.contents[0] as { text: string }).text, 'readme of files');
    const prompt = await client.getPrompt({ name: 'weather__greet', arguments: { name: 'Ada' } });
    assert.equal((prompt.messages[0]!.content as { text: string }).text, 'Hello Ada from weather');
  });

  test('/mcp/{server} serves one server with its own tool names', async () => {
    const client = await connect((await gw.createKey()).secret, '/mcp/files');
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), ['add', 'echo', 'fail']);
    assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'solo' } })), 'files:solo');
    const res = await fetch(`${gw.origin}/mcp/nosuch`, { method: 'POST', headers: { authorization: `Bearer ${(await gw.createKey()).secret}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { error: { data: { code: string } } }).error.data.code, 'mcp_unknown_tool');
  });

  test('a config reload that adds a server tells open sessions their tool list changed, and lists it', async () => {
    const extra = await startMcpUpstream('extra');
    try {
      const client = await connect((await gw.createKey()).secret);
      await client.listTools();
      const changed = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
      await new Promise((r) => setTimeout(r, 200));
      const current = gw.gateway.runtime().config;
      const next = parseConfig({ mcp_servers: [...current.mcp_servers, { id: 'extra', transport: 'streamable_http', url: extra.url, allowed_tools: ['echo'] }] }, 'reload');
      gw.gateway.reload({ config: { ...current, mcp_servers: next.mcp_servers }, source: 'reload' });
      await Promise.race([changed, new Promise((_, reject) => setTimeout(() => reject(new Error('no list_changed within 5 s')), 5000))]);
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'extra__echo'));
      assert.equal(textOf(await client.callTool({ name: 'extra__echo', arguments: { text: 'new' } })), 'extra:new');
    } finally {
      const current = gw.gateway.runtime().config;
      gw.gateway.reload({ config: { ...current, mcp_servers: current.mcp_servers.filter((s) => s.id !== 'extra') }, source: 'reload' });
      await extra.close();
    }
  });

  test('DELETE ends the gateway session and its upstream sessions', async () => {
    const client = await connect((await gw.createKey()).secret, '/mcp/weather');
    await client.callTool({ name: 'echo', arguments: { text: 'x' } });
    const sessions = gw.gateway.runtime().mcp.sessionCount;
    const upstream = weather.sessionCount();
    await (client.transport as StreamableHTTPClientTransport).terminateSession();
    assert.equal(gw.gateway.runtime().mcp.sessionCount, sessions - 1);
    assert.equal(weather.sessionCount(), upstream - 1);
  });
});

describe('MCP gateway over the legacy HTTP+SSE transport (SDK SSEClientTransport)', () => {
  test('GET /mcp/sse + POST /mcp/messages: the same aggregated view, key views and errors', async () => {
    const client = new Client({ name: 'legacy-client', version: '1.0.0' });
    await client.connect(new SSEClientTransport(new URL(`${gw.origin}/mcp/sse`), { requestInit: { headers: { authorization: `Bearer ${await keyWith({ allowed_tools: ['files', 'local__echo'] })}` } } }));
    clients.push(client);
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), ['files__add', 'files__echo', 'files__fail', 'local__echo']);
    assert.equal(textOf(await client.callTool({ name: 'local__echo', arguments: { text: 'sse' } })), 'stdio:sse');
    const err = await mcpError(client.callTool({ name: 'weather__echo', arguments: { text: 'no' } }));
    assert.deepEqual(err.data, { code: 'mcp_tool_not_allowed', param: 'name' });
  });

  test('/mcp/{server}/sse serves one server; a message for another key\'s session is a 404', async () => {
    const client = new Client({ name: 'legacy-client', version: '1.0.0' });
    const transport = new SSEClientTransport(new URL(`${gw.origin}/mcp/weather/sse`), { requestInit: { headers: { authorization: `Bearer ${(await gw.createKey()).secret}` } } });
    await client.connect(transport);
    clients.push(client);
    assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'one' } })), 'weather:one');
    const sessionId = (transport as unknown as { _endpoint?: URL })._endpoint?.searchParams.get('sessionId');
    assert.ok(sessionId);
    const res = await fetch(`${gw.origin}/mcp/weather/messages?sessionId=${sessionId}`, { method: 'POST', headers: { authorization: `Bearer ${(await gw.createKey()).secret}`, 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }) });
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { error: { data: { code: string } } }).error.data.code, 'mcp_session_not_found');
  });
});

describe('MCP gateway authentication and sessions', () => {
  const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
  const post = (headers: Record<string, string>, body: unknown = initialize) =>
    fetch(`${gw.origin}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) });

  test('no key: 401, a JSON-RPC error body and WWW-Authenticate: Bearer; a wrong key: invalid_token', async () => {
    const missing = await post({});
    assert.equal(missing.status, 401);
    assert.equal(missing.headers.get('www-authenticate'), 'Bearer realm="opinference"');
    const body = (await missing.json()) as { jsonrpc: string; id: null; error: { code: number; data: { code: string } } };
    assert.equal(body.jsonrpc, '2.0');
    assert.equal(body.id, null);
    assert.equal(body.error.data.code, 'missing_api_key');
    const wrong = await post({ authorization: 'Bearer op-not-a-key' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get('www-authenticate'), 'Bearer realm="opinference", error="invalid_token"');
    await assert.rejects(new Client({ name: 'x', version: '1' }).connect(new StreamableHTTPClientTransport(new URL(`${gw.origin}/mcp`))), (err: { code?: number }) => err.code === 401);
  });

  test('a browser Origin that is not the gateway\'s own nor in server.cors is refused with 403', async () => {
    const secret = (await gw.createKey()).secret;
    const foreign = await post({ authorization: `Bearer ${secret}`, origin: 'http://evil.example' });
    assert.equal(foreign.status, 403);
    assert.equal(((await foreign.json()) as { error: { data: { code: string } } }).error.data.code, 'mcp_origin_not_allowed');
    const own = await post({ authorization: `Bearer ${secret}`, origin: gw.origin });
    assert.equal(own.status, 200);
    await own.text();
  });

  test('the SDK negotiates 2025-06-18 and 2025-11-25; a session id is refused for another key (404)', async () => {
    const a = (await gw.createKey()).secret;
    for (const version of ['2025-06-18', '2025-11-25']) {
      const res = await post({ authorization: `Bearer ${a}`, accept: 'application/json, text/event-stream' }, { ...initialize, params: { ...initialize.params, protocolVersion: version } });
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.match(text, new RegExp(`"protocolVersion":"${version}"`));
      assert.ok(res.headers.get('mcp-session-id'));
    }
    const res = await post({ authorization: `Bearer ${a}` });
    const sessionId = res.headers.get('mcp-session-id')!;
    await res.text();
    const b = (await gw.createKey()).secret;
    const other = await post({ authorization: `Bearer ${b}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' }, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
    assert.equal(other.status, 404);
    assert.equal(((await other.json()) as { error: { code: number } }).error.code, -32001);
    const noSession = await post({ authorization: `Bearer ${b}` }, { jsonrpc: '2.0', id: 3, method: 'tools/list', params: {} });
    assert.equal(noSession.status, 400);
    await noSession.text();
  });
});
