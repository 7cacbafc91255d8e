/**
 * The Responses API `mcp` tool served by the gateway (issue 22 item 5), with the official
 * `openai` SDK: a request naming a configured MCP server (`server_label`) gets that server's
 * tools (the key's view, narrowed by the request's `allowed_tools`) listed into a scripted
 * chat-completions model's tools as `orders__<tool>`; the model's call runs through the MCP
 * gateway against an SDK `McpServer` that records calls; the model is asked again with the
 * result; the answer carries `mcp_list_tools` and `mcp_call` items (validated against OpenAI's
 * schema, events too), the usage of both turns, and each turn is a generation record under the
 * one request id. Bad `mcp` tools are 400s naming the field; the loop stops at max_rounds.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startOrdersUpstream, TRACKING, type OrdersUpstream } from '../helpers/mcp-orders-upstream.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { validateResponse, validateResponseStreamEvent } from '../helpers/openapi.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { createKey } from '../../src/store/keys.js';
import type { KeySettings } from '../../src/store/key-settings.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let model: Upstream;
let orders: OrdersUpstream;
let weather: McpUpstream;
let gw: TestGateway;

const completion = (message: Json, finish: string, usage: [number, number]) => ({
  json: { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'up-1', choices: [{ index: 0, message: { role: 'assistant', content: null, ...message }, finish_reason: finish }], usage: { prompt_tokens: usage[0], completion_tokens: usage[1], total_tokens: usage[0] + usage[1] } },
});
const callTurn = (name: string, args: Json, id = 'call_ord1') => completion({ tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] }, 'tool_calls', [120, 15]);
const textTurn = (text: string) => completion({ content: text }, 'stop', [180, 9]);

const ordersTool = (extra: Json = {}) => ({ type: 'mcp', server_label: 'orders', require_approval: 'never', ...extra }) as unknown as OpenAI.Responses.Tool;

async function sdkFor(settings: Partial<KeySettings> = {}): Promise<{ client: OpenAI; keyId: string }> {
  const { key, secret } = await createKey(gw.store.db, 'responses-mcp', null, settings);
  return { client: new OpenAI({ apiKey: secret, baseURL: gw.baseURL, maxRetries: 0 }), keyId: key.id };
}

async function badRequest(p: Promise<unknown>): Promise<{ status: number; param: string | null; code: string | null; message: string }> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof OpenAI.APIError, String(err));
    return { status: err.status as number, param: (err as { param?: string | null }).param ?? null, code: (err as { code?: string | null }).code ?? null, message: err.message };
  }
  assert.fail('the request succeeded');
}

before(async () => {
  model = await startUpstream();
  orders = await startOrdersUpstream();
  weather = await startMcpUpstream('weather');
  gw = await startGateway({
    retention: 1,
    providers: [{ id: 'up', kind: 'openai', base_url: model.url, api_key: 'sk-up' }],
    models: [{ id: 'test/model', context_length: 100000, endpoints: [{ provider: 'up', upstream_model: 'up-1', pricing: { prompt: 1, completion: 2 }, supported_parameters: ['tools', 'tool_choice', 'max_tokens', 'temperature'] }] }],
    mcp_servers: [
      { id: 'orders', transport: 'streamable_http', url: orders.url, headers: { Authorization: 'Bearer orders-token' } },
      { id: 'weather', transport: 'streamable_http', url: weather.url, allowed_tools: ['echo', 'fail'] },
    ],
    mcp_tool_loop: { max_rounds: 3 },
  });
});

after(async () => {
  await gw?.close();
  await model?.close();
  await orders?.close();
  await weather?.close();
});

describe('Responses API mcp tool (openai SDK, scripted model)', () => {
  test('the model calls the listed MCP tool; the gateway runs it once, asks again with its result, and answers with mcp_list_tools and mcp_call items', async () => {
    const { client, keyId } = await sdkFor();
    const calls = orders.calls.length;
    const seen = model.requests.length;
    model.enqueue(callTurn('orders__lookup_order', { order_id: 'C-3301' }), textTurn(`Order C-3301 has shipped; tracking ${TRACKING}.`));
    const response = await client.responses.create({ model: 'test/model', input: 'Where is order C-3301?', tools: [ordersTool({ allowed_tools: ['lookup_order'] })] });

    assert.deepEqual(validateResponse(response), []);
    assert.deepEqual(response.output.map((i) => i.type), ['mcp_list_tools', 'mcp_call', 'message']);
    const list = response.output[0] as Json;
    assert.equal(list.server_label, 'orders');
    assert.deepEqual(list.tools.map((t: Json) => t.name), ['lookup_order'], 'allowed_tools left cancel_order out');
    assert.deepEqual(list.tools[0].input_schema.required, ['order_id']);
    const call = response.output[1] as Json;
    assert.deepEqual([call.server_label, call.name, call.arguments, call.output, call.error, call.status], ['orders', 'lookup_order', '{"order_id":"C-3301"}', `order C-3301: shipped, 3 parcels, tracking ${TRACKING}`, null, 'completed']);
    assert.equal(response.output_text, `Order C-3301 has shipped; tracking ${TRACKING}.`);
    assert.equal(response.status, 'completed');
    assert.deepEqual([response.usage?.input_tokens, response.usage?.output_tokens, response.usage?.total_tokens], [300, 24, 324]);
    assert.equal((response.tools[0] as Json).type, 'mcp', 'the request\'s own tools are echoed');

    // The tool server: one call, the model's arguments, its configured header only.
    assert.deepEqual(orders.calls.slice(calls), [{ name: 'lookup_order', arguments: { order_id: 'C-3301' } }]);
    assert.ok(orders.headers.every((h) => h.authorization === 'Bearer orders-token'));
    // The model: offered the function, then given its result.
    const [first, second] = model.requests.slice(seen).map((r) => r.json as Json);
    assert.deepEqual(first!.tools.map((t: Json) => t.function.name), ['orders__lookup_order']);
    assert.deepEqual(first!.tools[0].function.parameters.required, ['order_id']);
    const toolMessage = (second!.messages as Json[]).find((m) => m.role === 'tool');
    assert.equal(toolMessage?.tool_call_id, 'call_ord1');
    assert.equal(toolMessage?.content, `order C-3301: shipped, 3 parcels, tracking ${TRACKING}`);

    // Two generation records, one per model turn, under one request id.
    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').selectAll().where('key_id', '=', keyId).orderBy('created_at').execute();
    assert.deepEqual(rows.map((r) => [r.api, r.status, r.finish_reason, r.prompt_tokens, r.completion_tokens]), [['responses', 'success', 'tool_calls', 120, 15], ['responses', 'success', 'stop', 180, 9]]);
    assert.equal(new Set(rows.map((r) => r.request_id)).size, 1);
    assert.equal(response.id, rows[1]!.id, 'the answer is the last turn\'s response');
  });

  test('streamed: mcp_list_tools and mcp_call events and items, each event valid against OpenAI\'s schema, then response.completed', async () => {
    const { client } = await sdkFor();
    model.enqueue(callTurn('orders__lookup_order', { order_id: 'D-4402' }, 'call_ord2'), textTurn('It has shipped.'));
    const stream = await client.responses.create({ model: 'test/model', input: 'Where is order D-4402?', stream: true, tools: [ordersTool()] });
    const events: Json[] = [];
    for await (const e of stream) events.push(e as Json);
    for (const e of events) assert.deepEqual(validateResponseStreamEvent(e), [], `${e.type}: ${JSON.stringify(e).slice(0, 300)}`);
    assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
    const types = events.map((e) => e.type);
    const order = ['response.created', 'response.mcp_list_tools.in_progress', 'response.mcp_list_tools.completed', 'response.mcp_call_arguments.done', 'response.mcp_call.in_progress', 'response.mcp_call.completed', 'response.output_text.delta', 'response.completed'];
    const at = order.map((t) => types.indexOf(t));
    assert.ok(at.every((i) => i >= 0), `missing events: ${order.filter((_, i) => at[i]! < 0).join(', ')}`);
    assert.deepEqual([...at].sort((a, b) => a - b), at, `events out of order: ${types.join(' ')}`);
    const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item as Json);
    assert.deepEqual(done.map((i) => i.type), ['mcp_list_tools', 'mcp_call', 'message']);
    assert.deepEqual(done[0]!.tools.map((t: Json) => t.name).sort(), ['cancel_order', 'lookup_order']);
    assert.equal(done[1]!.output, `order D-4402: shipped, 3 parcels, tracking ${TRACKING}`);
    const completed = events.at(-1)!;
    assert.equal(completed.type, 'response.completed');
    assert.deepEqual(validateResponse(completed.response), []);
    assert.equal(completed.response.output_text, 'It has shipped.');
    assert.deepEqual(completed.response.output.map((i: Json) => i.type), ['mcp_list_tools', 'mcp_call', 'message']);
  });

  test('a tool error result is an mcp_call with mcp_tool_execution_error; the model still reads it and answers', async () => {
    const { client } = await sdkFor();
    model.enqueue(callTurn('weather__fail', {}, 'call_w1'), textTurn('The weather tool failed.'));
    const response = await client.responses.create({ model: 'test/model', input: 'weather?', tools: [{ type: 'mcp', server_label: 'weather', require_approval: 'never' } as unknown as OpenAI.Responses.Tool] });
    assert.deepEqual(validateResponse(response), []);
    const call = response.output.find((i) => i.type === 'mcp_call') as Json;
    assert.equal(call.status, 'failed');
    assert.equal(call.output, null);
    assert.deepEqual(call.error, { type: 'mcp_tool_execution_error', content: [{ type: 'text', text: 'it failed' }] });
    const second = model.requests.at(-1)!.json as Json;
    assert.equal((second.messages as Json[]).find((m) => m.role === 'tool')?.content, 'it failed');
  });

  test('the key\'s allowed_tools decide what is listed; a server the key sees nothing of is a 400 naming server_label', async () => {
    const narrow = await sdkFor({ allowed_tools: ['orders__cancel_order'] });
    model.enqueue(textTurn('nothing to do'));
    const response = await narrow.client.responses.create({ model: 'test/model', input: 'hi', tools: [ordersTool()] });
    assert.deepEqual((response.output[0] as Json).tools.map((t: Json) => t.name), ['cancel_order']);
    const none = await sdkFor({ allowed_tools: ['weather'] });
    const err = await badRequest(none.client.responses.create({ model: 'test/model', input: 'hi', tools: [ordersTool()] }));
    assert.deepEqual([err.status, err.param], [400, 'tools[0].server_label']);
    assert.match(err.message, /offers no tool to this request/);
  });

  test('require_approval other than "never", a server URL, or an unconfigured server_label: 400 naming the field, nothing sent upstream', async () => {
    const { client, keyId } = await sdkFor();
    const seen = model.requests.length;
    const always = await badRequest(client.responses.create({ model: 'test/model', input: 'x', tools: [ordersTool({ require_approval: 'always' })] }));
    assert.deepEqual([always.status, always.code, always.param], [400, 'unsupported_parameter', 'tools[0].require_approval']);
    assert.match(always.message, /send "never"/);
    const unset = await badRequest(client.responses.create({ model: 'test/model', input: 'x', tools: [{ type: 'function', name: 'f', parameters: {}, strict: false }, { type: 'mcp', server_label: 'orders' } as unknown as OpenAI.Responses.Tool] }));
    assert.deepEqual([unset.status, unset.param], [400, 'tools[1].require_approval']);
    const url = await badRequest(client.responses.create({ model: 'test/model', input: 'x', tools: [ordersTool({ server_url: 'https://evil.example/mcp' })] }));
    assert.deepEqual([url.status, url.code, url.param], [400, 'unsupported_parameter', 'tools[0].server_url']);
    const unknown = await badRequest(client.responses.create({ model: 'test/model', input: 'x', tools: [ordersTool({ server_label: 'nosuch' })] }));
    assert.deepEqual([unknown.status, unknown.code, unknown.param], [400, 'invalid_request', 'tools[0].server_label']);
    assert.match(unknown.message, /servers: orders, weather/);
    assert.equal(model.requests.length, seen, 'no model turn was made');
    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').selectAll().where('key_id', '=', keyId).execute();
    assert.deepEqual(rows.map((r) => `${r.status} ${r.error_code} ${r.http_status}`).sort(), ['error invalid_request 400', 'error unsupported_parameter 400', 'error unsupported_parameter 400', 'error unsupported_parameter 400']);
  });

  test('a model that keeps calling stops at mcp_tool_loop.max_rounds: the last turn is asked with tool_choice "none" and its call is reported not run', async () => {
    const { client } = await sdkFor();
    const calls = orders.calls.length;
    const seen = model.requests.length;
    model.enqueue(callTurn('orders__lookup_order', { order_id: 'E-1' }, 'call_r1'), callTurn('orders__lookup_order', { order_id: 'E-2' }, 'call_r2'), callTurn('orders__lookup_order', { order_id: 'E-3' }, 'call_r3'));
    const response = await client.responses.create({ model: 'test/model', input: 'loop', tools: [ordersTool()] });
    assert.deepEqual(validateResponse(response), []);
    assert.equal(model.requests.length - seen, 3);
    assert.deepEqual(model.requests.slice(seen).map((r) => (r.json as Json).tool_choice ?? 'auto'), ['auto', 'auto', 'none']);
    assert.deepEqual(orders.calls.slice(calls).map((c) => c.arguments.order_id), ['E-1', 'E-2']);
    assert.equal(response.status, 'incomplete');
    const mcpCalls = response.output.filter((i) => i.type === 'mcp_call') as Json[];
    assert.deepEqual(mcpCalls.map((c) => c.status), ['completed', 'completed', 'incomplete']);
    assert.match(mcpCalls[2]!.error.message, /not run: the tool loop reached its bounds/);
  });
});
