/**
 * MCP tool-call records, limits, metrics and spans (issue 22 item 4), with the official SDK's
 * client against the gateway's `/mcp` and upstream servers built with the SDK's `McpServer`:
 * every `tools/call` (ok, tool error, error, refused) is one `mcp_tool_calls` row with exact
 * sizes, its text only under a retention that keeps text; `GET /v1/mcp/calls` and `…/summary`
 * read them (a key its own, the admin key all); `mcp_calls_per_minute` refuses the N+1th call
 * with `mcp_rate_limited`, exactly across two gateways sharing Redis; `/metrics` counts the
 * calls; each call is an `execute_tool` span (a Responses `mcp` tool loop's under its request,
 * with the model's call id); a database that cannot be written keeps the records queued.
 * SQLite, or PostgreSQL with OP_TEST_DATABASE_URL.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Kysely } from 'kysely';
import OpenAI from 'openai';
import { parseConfig } from '../../src/config/load.js';
import { buildGateway, type Gateway } from '../../src/server/app.js';
import type { OpenDatabase } from '../../src/store/database.js';
import { createKey } from '../../src/store/keys.js';
import type { KeySettings } from '../../src/store/key-settings.js';
import { McpCallWriter } from '../../src/store/mcp-call-writer.js';
import { purgeExpiredMcpCallText } from '../../src/store/mcp-calls.js';
import { GatewayMetrics } from '../../src/pipeline/state/metrics.js';
import type { GatewayRuntime } from '../../src/pipeline/state/runtime.js';
import { MAX_TOOL_LABELS_PER_SERVER, mcpCallObserver } from '../../src/server/mcp-call-observer.js';
import { migrate } from '../../src/store/migrations.js';
import type { Database, McpToolCallsTable } from '../../src/store/schema.js';
import { startTelemetry, type Telemetry } from '../../src/telemetry/telemetry.js';
import { randomId } from '../../src/util/ids.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startOrdersUpstream, type OrdersUpstream } from '../helpers/mcp-orders-upstream.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { redisReachable, TEST_REDIS_URL } from '../helpers/redis.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { createTestDatabase } from '../helpers/test-database.js';
import { gatewayLogStream } from '../helpers/test-output.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A loopback OTLP/HTTP receiver keeping the spans posted to /v1/traces (JSON encoding). */
class OtlpReceiver {
  readonly traces: Json[] = [];
  private server: Server | undefined;
  origin = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/v1/traces') this.traces.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  spans(): Json[] {
    return this.traces.flatMap((b) => (b.resourceSpans as Json[]).flatMap((rs) => (rs.scopeSpans as Json[]).flatMap((ss) => ss.spans as Json[])));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server!.close(() => resolve()));
  }
}

function attrs(list: Json[] | undefined): Json {
  const out: Json = {};
  for (const { key, value } of list ?? []) out[key] = 'stringValue' in value ? value.stringValue : 'intValue' in value ? Number(value.intValue) : 'boolValue' in value ? value.boolValue : value.doubleValue;
  return out;
}

let gw: TestGateway;
let weather: McpUpstream;
let orders: OrdersUpstream;
let model: Upstream;
let receiver: OtlpReceiver;
let telemetry: Telemetry | undefined;
const clients: Client[] = [];

async function connect(origin: string, secret: string, path = '/mcp'): Promise<Client> {
  const client = new Client({ name: 'records-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${origin}${path}`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
  clients.push(client);
  return client;
}

async function keyWith(settings: Partial<KeySettings>, db = gw.store.db): Promise<{ id: string; secret: string }> {
  const { key, secret } = await createKey(db, 'mcp-records', null, settings);
  return { id: key.id, secret };
}

async function mcpError(p: Promise<unknown>): Promise<McpError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof McpError, `expected an McpError, got ${String(err)}`);
    return err;
  }
  assert.fail('the call succeeded');
}

/** The key's rows, oldest first, after the MCP call writer has written what it holds. */
async function rowsOf(keyId: string | null, g: TestGateway = gw): Promise<McpToolCallsTable[]> {
  await g.gateway.runtime().mcpCalls.flush();
  let q = g.store.db.selectFrom('mcp_tool_calls').selectAll();
  q = keyId === null ? q.where('key_id', 'is', null) : q.where('key_id', '=', keyId);
  return (await q.orderBy('created_at').orderBy('id').execute()).map((r) => ({ ...r, latency_ms: Number(r.latency_ms), request_bytes: Number(r.request_bytes), response_bytes: Number(r.response_bytes), created_at: Number(r.created_at) }));
}

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

async function getJson(origin: string, secret: string, path: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${secret}` } });
  return { status: res.status, body: (await res.json()) as Json };
}

/** Wait until at least `ms` remain in the current UTC minute (the limit windows are fixed minutes). */
async function awayFromMinuteEnd(ms = 8_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < ms) await new Promise((r) => setTimeout(r, left + 50));
}

before(async () => {
  weather = await startMcpUpstream('weather');
  orders = await startOrdersUpstream();
  model = await startUpstream();
  receiver = new OtlpReceiver();
  await receiver.start();
  // The SDK's exporters read the endpoint from the environment.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.origin;
  telemetry = await startTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin, OTEL_METRICS_EXPORTER: 'none' }, { capture_content: false, max_queue_size: 2048 });
  gw = await startGateway({
    retention: 'none',
    providers: [{ id: 'up', kind: 'openai', base_url: model.url, api_key: 'sk-up' }],
    models: [{ id: 'test/model', context_length: 100000, endpoints: [{ provider: 'up', upstream_model: 'up-1', pricing: { prompt: 1, completion: 2 }, supported_parameters: ['tools', 'tool_choice', 'max_tokens'] }] }],
    mcp_servers: [
      { id: 'weather', transport: 'streamable_http', url: weather.url, timeout_ms: 300 },
      { id: 'orders', transport: 'streamable_http', url: orders.url },
    ],
  }, { telemetry });
});

after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await gw?.close();
  await weather?.close();
  await orders?.close();
  await model?.close();
  await receiver?.close();
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
});

describe('MCP tool-call records', () => {
  test('every tools/call is one row: ok, tool_error, error (timeout) and refused, with exact sizes; text kept under retention 7', async () => {
    const key = await keyWith({ retention: 7, allowed_tools: ['weather__echo', 'weather__fail', 'weather__hang'] });
    const client = await connect(gw.origin, key.secret);
    const ok = (await client.callTool({ name: 'weather__echo', arguments: { text: 'hi' } })) as CallToolResult;
    assert.deepEqual(ok.content, [{ type: 'text', text: 'weather:hi' }]);
    const failed = (await client.callTool({ name: 'weather__fail' })) as CallToolResult;
    assert.equal(failed.isError, true);
    const timeout = await mcpError(client.callTool({ name: 'weather__hang' }));
    assert.equal((timeout.data as Json).code, 'mcp_upstream_timeout');
    const before = weather.calls.get('add') ?? 0;
    const refused = await mcpError(client.callTool({ name: 'weather__add', arguments: { a: 1, b: 2 } }));
    assert.equal((refused.data as Json).code, 'mcp_tool_not_allowed');
    assert.equal(weather.calls.get('add') ?? 0, before, 'a refused call never reaches the upstream');

    const rows = await rowsOf(key.id);
    assert.deepEqual(rows.map((r) => [r.server, r.tool, r.status, r.error_code]), [
      ['weather', 'echo', 'ok', null],
      ['weather', 'fail', 'tool_error', null],
      ['weather', 'hang', 'error', 'mcp_upstream_timeout'],
      ['weather', 'add', 'refused', 'mcp_tool_not_allowed'],
    ]);
    const [echo, fail, hang, add] = rows as [McpToolCallsTable, McpToolCallsTable, McpToolCallsTable, McpToolCallsTable];
    assert.equal(echo.request_bytes, bytes({ text: 'hi' }));
    assert.equal(echo.request_bytes, 13);
    assert.equal(echo.response_bytes, bytes(ok));
    assert.deepEqual(JSON.parse(echo.arguments!), { text: 'hi' });
    assert.deepEqual(JSON.parse(echo.result!), ok);
    assert.equal(echo.retention, '7');
    assert.equal(echo.request_id, null, 'a /mcp client has no request of a tool loop');
    assert.match(echo.session_id, /^[0-9a-f-]{36}$/);
    assert.match(echo.id, /^mcpc_/);
    assert.equal(fail.request_bytes, 0);
    assert.equal(fail.response_bytes, bytes(failed));
    assert.equal(fail.arguments, null, 'the call sent no arguments');
    assert.ok(hang.latency_ms >= 290 && hang.latency_ms < 5000, `timeout latency ${hang.latency_ms}`);
    assert.equal(hang.response_bytes, 0);
    assert.equal(hang.result, null);
    assert.match(hang.error_message!, /timeout_ms|did not answer|300/);
    assert.equal(add.request_bytes, bytes({ a: 1, b: 2 }));
    assert.deepEqual(JSON.parse(add.arguments!), { a: 1, b: 2 });
    assert.match(add.error_message!, /not in the key's allowed_tools/);
    for (const r of rows) assert.equal(r.team_id, null);
  });

  test('under retention none (the gateway\'s default here) no argument or result text is recorded', async () => {
    const key = await keyWith({});
    const client = await connect(gw.origin, key.secret);
    await client.callTool({ name: 'weather__echo', arguments: { text: 'secret words' } });
    const [row] = await rowsOf(key.id);
    assert.deepEqual([row!.status, row!.retention, row!.arguments, row!.result, row!.request_bytes], ['ok', 'none', null, null, bytes({ text: 'secret words' })]);
    const listed = await getJson(gw.origin, key.secret, '/v1/mcp/calls');
    assert.equal(JSON.stringify(listed.body).includes('secret words'), false);
  });

  test('the retention purge clears arguments and results past their days, not before', async () => {
    const key = await keyWith({ retention: 1 });
    const client = await connect(gw.origin, key.secret);
    await client.callTool({ name: 'weather__echo', arguments: { text: 'kept a day' } });
    const [row] = await rowsOf(key.id);
    assert.notEqual(row!.arguments, null);
    assert.equal(await purgeExpiredMcpCallText(gw.store.db, Date.now() + 3_600_000), 0);
    assert.ok((await purgeExpiredMcpCallText(gw.store.db, Date.now() + 2 * 86_400_000)) >= 1);
    const [after] = await rowsOf(key.id);
    assert.deepEqual([after!.arguments, after!.result, after!.status, after!.request_bytes], [null, null, 'ok', row!.request_bytes]);
  });
});

describe('GET /v1/mcp/calls and /v1/mcp/calls/summary', () => {
  test('a key lists its own calls, filtered and paged; the admin key sees every key\'s', async () => {
    const a = await keyWith({ retention: 3 });
    const b = await keyWith({});
    const ca = await connect(gw.origin, a.secret);
    const cb = await connect(gw.origin, b.secret);
    for (const text of ['one', 'two', 'three']) await ca.callTool({ name: 'weather__echo', arguments: { text } });
    await ca.callTool({ name: 'weather__fail' });
    await cb.callTool({ name: 'weather__echo', arguments: { text: 'b' } });
    await gw.gateway.runtime().mcpCalls.flush();

    const own = await getJson(gw.origin, a.secret, '/v1/mcp/calls?tool=echo&limit=2');
    assert.equal(own.status, 200);
    assert.deepEqual(own.body.data.map((c: Json) => c.arguments.text), ['three', 'two'], 'newest first');
    assert.ok(own.body.data.every((c: Json) => c.key_id === a.id && c.server === 'weather' && c.status === 'ok'));
    assert.deepEqual(own.body.data[0].result, { content: [{ type: 'text', text: 'weather:three' }] });
    const next = await getJson(gw.origin, a.secret, `/v1/mcp/calls?tool=echo&limit=2&cursor=${own.body.next_cursor}`);
    assert.deepEqual(next.body.data.map((c: Json) => c.arguments.text), ['one']);
    assert.equal(next.body.next_cursor, null);
    const errors = await getJson(gw.origin, a.secret, '/v1/mcp/calls?status=tool_error');
    assert.deepEqual(errors.body.data.map((c: Json) => c.tool), ['fail']);
    // Another key's calls are not visible; the admin key sees both.
    const other = await getJson(gw.origin, a.secret, `/v1/mcp/calls?key_id=${b.id}`);
    assert.equal(other.status, 404);
    const all = await getJson(gw.origin, gw.adminKey, `/v1/mcp/calls?key_id=${b.id}`);
    assert.deepEqual(all.body.data.map((c: Json) => [c.key_id, c.tool, c.arguments]), [[b.id, 'echo', null]]);
    // Bad input: 400 naming the parameter.
    for (const [q, param] of [['status=nope', 'status'], ['limit=0', 'limit'], ['cursor=%21', 'cursor'], ['since=yesterday', 'since'], ['color=red', 'color']] as const) {
      const res = await getJson(gw.origin, a.secret, `/v1/mcp/calls?${q}`);
      assert.equal(res.status, 400, q);
      assert.equal(res.body.error.param, param, q);
      assert.equal(res.body.error.code, 'invalid_request');
    }
  });

  test('the summary counts calls and errors and gives p50/p95 latency by server and tool, and by key', async () => {
    const k = await keyWith({});
    const client = await connect(gw.origin, k.secret);
    for (let i = 0; i < 5; i++) await client.callTool({ name: 'weather__echo', arguments: { text: String(i) } });
    await client.callTool({ name: 'weather__fail' });
    await mcpError(client.callTool({ name: 'weather__nope' })).catch(() => undefined);
    const rows = await rowsOf(k.id);
    const echoLatencies = rows.filter((r) => r.tool === 'echo').map((r) => r.latency_ms).sort((x, y) => x - y);
    const sum = await getJson(gw.origin, k.secret, '/v1/mcp/calls/summary');
    assert.equal(sum.status, 200);
    const echo = sum.body.data.find((g: Json) => g.tool === 'echo');
    assert.deepEqual(echo, { server: 'weather', tool: 'echo', calls: 5, ok: 5, tool_errors: 0, errors: 0, refused: 0, p50_latency_ms: echoLatencies[2], p95_latency_ms: echoLatencies[4] });
    const fail = sum.body.data.find((g: Json) => g.tool === 'fail');
    assert.deepEqual([fail.calls, fail.ok, fail.tool_errors], [1, 0, 1]);
    assert.equal(sum.body.data[0].tool, 'echo', 'most calls first');
    const byKey = await getJson(gw.origin, gw.adminKey, `/v1/mcp/calls/summary?by_key=true&key_id=${k.id}`);
    assert.ok(byKey.body.data.every((g: Json) => g.key_id === k.id));
    assert.equal(byKey.body.data.find((g: Json) => g.tool === 'echo').calls, 5);
    const admin = await getJson(gw.origin, gw.adminKey, '/v1/mcp/calls/summary?server=weather&tool=echo');
    assert.ok(admin.body.data[0].calls > 5, 'the admin key counts every key\'s calls');
    const long = await getJson(gw.origin, k.secret, '/v1/mcp/calls/summary?since=2020-01-01');
    assert.equal(long.status, 400);
    assert.equal(long.body.error.param, 'since');
  });
});

describe('mcp_calls_per_minute', () => {
  test('the N+1th call in a minute is refused with mcp_rate_limited (JSON-RPC -32029), recorded as refused, never sent upstream', async () => {
    await awayFromMinuteEnd();
    const admin = await fetch(`${gw.baseURL}/keys`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'mcp-limited', mcp_calls_per_minute: 3 }) });
    const created = (await admin.json()) as Json;
    assert.equal(created.data.mcp_calls_per_minute, 3);
    const client = await connect(gw.origin, created.key as string);
    const before = weather.calls.get('echo') ?? 0;
    for (let i = 0; i < 3; i++) await client.callTool({ name: 'weather__echo', arguments: { text: `n${i}` } });
    const err = await mcpError(client.callTool({ name: 'weather__echo', arguments: { text: 'n3' } }));
    assert.equal(err.code, -32029);
    assert.equal((err.data as Json).code, 'mcp_rate_limited');
    assert.ok((err.data as Json).retry_after_ms > 0 && (err.data as Json).retry_after_ms <= 60_000);
    assert.match(err.message, /3 MCP tool calls per minute/);
    assert.equal(weather.calls.get('echo'), before + 3);
    const rows = await rowsOf(created.data.id as string);
    assert.deepEqual(rows.map((r) => [r.status, r.error_code]), [['ok', null], ['ok', null], ['ok', null], ['refused', 'mcp_rate_limited']]);
    // The limit is apart from the key's request window: a bad value is a 400 naming it.
    const bad = await fetch(`${gw.baseURL}/keys/${created.data.id}`, { method: 'PATCH', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ mcp_calls_per_minute: 0 }) });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as Json).error.param, 'mcp_calls_per_minute');
  });
});

describe('metrics and spans', () => {
  test('/metrics counts calls by server, tool and status, with their durations', async () => {
    const k = await keyWith({});
    const client = await connect(gw.origin, k.secret, '/mcp/orders');
    await client.callTool({ name: 'cancel_order', arguments: { order_id: 'M-1' } });
    await client.callTool({ name: 'cancel_order', arguments: { order_id: 'M-2' } });
    const text = await (await fetch(`${gw.origin}/metrics`)).text();
    assert.match(text, /^opinference_mcp_tool_calls_total\{server="orders",tool="cancel_order",status="ok"\} 2$/m);
    assert.match(text, /^opinference_mcp_tool_call_duration_seconds_count\{server="orders",tool="cancel_order"\} 2$/m);
    assert.match(text, /^opinference_mcp_tool_calls_total\{server="weather",tool="add",status="refused"\} 1$/m);
  });

  test('tool names a client makes up cannot grow the series: past 500 names per server they count under _other', async () => {
    const metrics = new GatewayMetrics();
    const queued: McpToolCallsTable[] = [];
    const observer = mcpCallObserver(() => ({ metrics, mcpCalls: { add: (r: McpToolCallsTable) => queued.push(r) } }) as unknown as GatewayRuntime);
    const key = { id: 'key_x', allowedTools: [], maxTools: null };
    for (let i = 0; i < MAX_TOOL_LABELS_PER_SERVER + 2; i++) {
      observer.ended!({ keyId: 'key_x', key, sessionId: 's', requestId: undefined, callId: undefined, server: 'weather', tool: `made_up_${i}`, arguments: undefined, argumentBytes: 0, status: 'error', latencyMs: 1, resultBytes: 0, error: { code: -32602, message: 'unknown tool' } });
    }
    const text = await metrics.registry.metrics();
    assert.match(text, /^opinference_mcp_tool_calls_total\{server="weather",tool="_other",status="error"\} 2$/m);
    assert.match(text, /^opinference_mcp_tool_calls_total\{server="weather",tool="made_up_499",status="error"\} 1$/m);
    assert.equal(queued.length, MAX_TOOL_LABELS_PER_SERVER + 2, 'every call is still recorded, under its own name');
    assert.equal(queued[MAX_TOOL_LABELS_PER_SERVER + 1]!.tool, 'made_up_501');
  });

  test('a /mcp call is an execute_tool span with the gen_ai.tool attributes; a Responses mcp tool call is one under its request, with the model\'s call id, recorded under its request id', async () => {
    const k = await keyWith({});
    const client = await connect(gw.origin, k.secret);
    await client.callTool({ name: 'weather__echo', arguments: { text: 'span' } });
    const completion = (message: Json, finish: string) => ({ json: { id: 'c', object: 'chat.completion', created: 1, model: 'up-1', choices: [{ index: 0, message: { role: 'assistant', content: null, ...message }, finish_reason: finish }], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } } });
    model.enqueue(completion({ tool_calls: [{ id: 'call_span7', type: 'function', function: { name: 'orders__lookup_order', arguments: '{"order_id":"S-7"}' } }] }, 'tool_calls'), completion({ content: 'shipped' }, 'stop'));
    const openai = new OpenAI({ apiKey: k.secret, baseURL: gw.baseURL, maxRetries: 0 });
    const { data: response, response: raw } = await openai.responses.create({ model: 'test/model', input: 'where is S-7?', tools: [{ type: 'mcp', server_label: 'orders', require_approval: 'never' } as unknown as OpenAI.Responses.Tool] }).withResponse();
    assert.equal(response.output_text, 'shipped');
    const requestId = raw.headers.get('x-request-id')!;
    await telemetry!.flush();
    const spans = receiver.spans();
    const direct = spans.find((s) => s.name === 'execute_tool echo' && attrs(s.attributes)['op.key_id'] === k.id);
    assert.ok(direct, 'the /mcp call has a span');
    const a = attrs(direct.attributes);
    assert.deepEqual([a['gen_ai.operation.name'], a['gen_ai.tool.name'], a['mcp.server'], a['mcp.method.name'], a['op.mcp.status'], a['op.mcp.request_bytes']], ['execute_tool', 'echo', 'weather', 'tools/call', 'ok', bytes({ text: 'span' })]);
    assert.equal(a['gen_ai.tool.call.id'], undefined, 'a /mcp client names no model call id');
    const looped = spans.find((s) => s.name === 'execute_tool lookup_order' && attrs(s.attributes)['op.request_id'] === requestId);
    assert.ok(looped, 'the tool loop\'s call has a span');
    const la = attrs(looped.attributes);
    assert.deepEqual([la['gen_ai.tool.call.id'], la['mcp.server'], la['gen_ai.tool.name']], ['call_span7', 'orders', 'lookup_order']);
    const server = spans.find((s) => s.kind === 2 && attrs(s.attributes)['op.request_id'] === requestId);
    assert.ok(server, 'the request has its server span');
    assert.equal(looped.parentSpanId, server.spanId);
    assert.equal(looped.traceId, server.traceId);
    const rows = await rowsOf(k.id);
    const loopRow = rows.find((r) => r.tool === 'lookup_order')!;
    assert.deepEqual([loopRow.request_id, loopRow.server, loopRow.status, loopRow.request_bytes], [requestId, 'orders', 'ok', bytes({ order_id: 'S-7' })]);
    assert.match(loopRow.session_id, /^inproc_/);
  });
});

describe('the Responses mcp tool loop', () => {
  test('its calls are recorded under the request, keeping text as the request\'s op.retention says', async () => {
    const k = await keyWith({});
    const turn = (message: Json, finish: string) => ({ json: { id: 'c', object: 'chat.completion', created: 1, model: 'up-1', choices: [{ index: 0, message: { role: 'assistant', content: null, ...message }, finish_reason: finish }], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } } });
    model.enqueue(turn({ tool_calls: [{ id: 'call_ret2', type: 'function', function: { name: 'orders__cancel_order', arguments: '{"order_id":"R-2"}' } }] }, 'tool_calls'), turn({ content: 'cancelled' }, 'stop'));
    const res = await fetch(`${gw.baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/model', input: 'cancel R-2', tools: [{ type: 'mcp', server_label: 'orders', require_approval: 'never' }], op: { retention: 2 } }),
    });
    assert.equal(res.status, 200);
    const requestId = res.headers.get('x-request-id');
    const [row] = await rowsOf(k.id);
    assert.deepEqual([row!.request_id, row!.tool, row!.status, row!.retention], [requestId, 'cancel_order', 'ok', '2']);
    assert.deepEqual(JSON.parse(row!.arguments!), { order_id: 'R-2' });
    assert.deepEqual(JSON.parse(row!.result!), { content: [{ type: 'text', text: 'order R-2 cancelled' }] });
  });
});

describe('the record writer when the database cannot be written', () => {
  test('records stay queued while writes fail (nothing blocks, nothing lost, /ready 503) and are written once the database is back', async () => {
    let failing = true;
    const real = gw.store.db;
    // The writer uses transaction() and insertInto(): both fail like a full disk while `failing`.
    const full = () => Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    const db = {
      transaction: () => ({ execute: async (fn: (trx: Kysely<Database>) => Promise<void>) => { if (failing) throw full(); return real.transaction().execute(fn); } }),
      insertInto: (t: 'mcp_tool_calls') => (failing ? { values: () => ({ execute: async () => { throw full(); } }) } : real.insertInto(t)),
    } as unknown as Kysely<Database>;
    const logged: string[] = [];
    const writer = new McpCallWriter(db, { error: (_o, m) => logged.push(m), warn: (_o, m) => logged.push(m) }, 10);
    const id = `mcpc_outage${randomId(8)}`;
    const row: McpToolCallsTable = { id, created_at: Date.now(), key_id: null, team_id: null, request_id: null, session_id: 's', server: 'weather', tool: 'echo', status: 'ok', error_code: null, error_message: null, latency_ms: 3, request_bytes: 2, response_bytes: 5, retention: 'none', arguments: null, result: null };
    const started = performance.now();
    writer.add(row);
    assert.ok(performance.now() - started < 5, 'add never waits for the database');
    await writer.flush();
    assert.equal(writer.queued, 1);
    assert.match(writer.problem!, /SQLITE_FULL/);
    assert.match(logged[0]!, /cannot be written: SQLITE_FULL/);
    // /ready says so while it lasts (as for generation records).
    const runtime = gw.gateway.runtime();
    const own = runtime.mcpCalls;
    runtime.mcpCalls = writer;
    try {
      const ready = await fetch(`${gw.origin}/ready`);
      assert.equal(ready.status, 503);
      assert.match(((await ready.json()) as Json).reason, /MCP call records cannot be written: SQLITE_FULL/);
    } finally {
      runtime.mcpCalls = own;
    }
    failing = false;
    await writer.close();
    assert.equal(writer.queued, 0);
    assert.equal(writer.dropped, 0);
    assert.equal(writer.problem, null);
    const stored = await real.selectFrom('mcp_tool_calls').select(['id', 'tool', 'status']).where('id', '=', id).execute();
    assert.deepEqual(stored, [{ id, tool: 'echo', status: 'ok' }]);
  });
});

describe('mcp_calls_per_minute across two gateways sharing Redis', { skip: !(await redisReachable()) && 'no Redis' }, () => {
  const replicas: { gateway: Gateway; store: OpenDatabase; origin: string }[] = [];
  let drop: () => Promise<void>;
  before(async () => {
    const database = await createTestDatabase();
    drop = () => database.drop();
    const prefix = `op-test:${randomId(12)}:`;
    for (let i = 0; i < 2; i++) {
      const store = database.open();
      await migrate(store.db);
      const config = parseConfig({ mcp_servers: [{ id: 'weather', transport: 'streamable_http', url: weather.url }] }, 'test config');
      const gateway = buildGateway({ loaded: { config, source: 'test' }, db: store.db, adminKey: 'admin-test-key', logger: { level: 'warn', stream: gatewayLogStream() }, redisUrl: TEST_REDIS_URL, redisPrefix: prefix, purgeIntervalMs: 0 });
      await gateway.app.listen({ port: 0, host: '127.0.0.1' });
      replicas.push({ gateway, store, origin: `http://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}` });
    }
  });
  after(async () => {
    for (const r of replicas) {
      await r.gateway.close();
      await r.store.close();
    }
    await drop?.();
  });

  test('a limit of 5 admits exactly 5 calls made alternately through both, and refuses the rest', async () => {
    await awayFromMinuteEnd();
    const [a, b] = replicas as [typeof replicas[0], typeof replicas[0]];
    const key = await keyWith({ mcp_calls_per_minute: 5 }, a.store.db);
    const ca = await connect(a.origin, key.secret);
    const cb = await connect(b.origin, key.secret);
    const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? cb : ca).callTool({ name: 'weather__echo', arguments: { text: String(i) } }).then(() => 'ok', (e: unknown) => ((e as McpError).data as Json).code as string)));
    assert.equal(outcomes.filter((o) => o === 'ok').length, 5, outcomes.join(' '));
    assert.equal(outcomes.filter((o) => o === 'mcp_rate_limited').length, 7, outcomes.join(' '));
    await a.gateway.runtime().mcpCalls.flush();
    await b.gateway.runtime().mcpCalls.flush();
    const rows = await a.store.db.selectFrom('mcp_tool_calls').select(['status']).where('key_id', '=', key.id).execute();
    assert.equal(rows.length, 12);
    assert.equal(rows.filter((r) => r.status === 'refused').length, 7);
  });
});
