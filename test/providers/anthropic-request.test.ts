/**
 * Request translation of provider kind `anthropic`: an OpenAI-format request sent to the gateway,
 * checked against the exact body (and URL / headers) the fake Anthropic upstream received.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { validateChatCompletion, validateChatCompletionChunk } from '../helpers/openapi.js';
import { sseJsonEvents } from '../helpers/sse.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const PARAMS = ['tools', 'tool_choice', 'parallel_tool_calls', 'reasoning', 'response_format', 'temperature', 'top_p', 'top_k', 'stop', 'max_tokens', 'max_completion_tokens', 'user'];

/**
 * Models:
 * - `anthropic/claude`: provider `claude` (base_url = upstream URL, ending in /v1);
 * - `anthropic/claude-capped`: the same with `max_completion_tokens: 8192`;
 * - `anthropic/claude-native`: the same with `structured_outputs` listed;
 * - `anthropic/claude-root`: provider `claude-root` whose base_url is the upstream origin with a
 *   trailing slash (no /v1), extra headers, and only `temperature` supported.
 */
function config(upstreamUrl: string) {
  const endpoint = { provider: 'claude', upstream_model: 'claude-sonnet-4-5', pricing: { prompt: 3, completion: 15 }, supported_parameters: PARAMS };
  return {
    providers: [
      { id: 'claude', kind: 'anthropic', base_url: upstreamUrl, api_key: 'k' },
      { id: 'claude-root', kind: 'anthropic', base_url: `${upstreamUrl.replace(/\/v1$/, '')}/`, api_key: 'k2', headers: { 'Anthropic-Beta': 'output-128k-2025-02-19' } },
    ],
    models: [
      { id: 'anthropic/claude', context_length: 200000, architecture: { input_modalities: ['text', 'image', 'file'] }, endpoints: [endpoint] },
      { id: 'anthropic/claude-capped', context_length: 200000, architecture: { input_modalities: ['text', 'image', 'file'] }, endpoints: [{ ...endpoint, max_completion_tokens: 8192 }] },
      { id: 'anthropic/claude-native', context_length: 200000, architecture: { input_modalities: ['text', 'image', 'file'] }, endpoints: [{ ...endpoint, supported_parameters: [...PARAMS, 'structured_outputs'] }] },
      { id: 'anthropic/claude-root', context_length: 200000, architecture: { input_modalities: ['text', 'image', 'file'] }, endpoints: [{ ...endpoint, provider: 'claude-root', upstream_model: 'claude-haiku-4-5', supported_parameters: ['temperature'] }] },
    ],
  };
}

/** A complete Anthropic response with `content` blocks. */
function message(content: Json[], stop_reason = 'end_turn', usage: Json = { input_tokens: 10, output_tokens: 5 }): Json {
  return { id: 'msg_test', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content, stop_reason, stop_sequence: null, usage };
}

const OK = message([{ type: 'text', text: 'ok' }]);
const text = (t: string, extra: Json = {}): Json => ({ type: 'text', text: t, ...extra });
const user = (...content: Json[]): Json => ({ role: 'user', content });
const assistant = (...content: Json[]): Json => ({ role: 'assistant', content });

const WEATHER_TOOL = { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };
const TIME_TOOL = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } };
const WEATHER_WIRE = { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
const TIME_WIRE = { name: 'get_time', input_schema: { type: 'object', properties: {} } };

describe('Anthropic request translation', () => {
  let upstream: Upstream;
  let gw: TestGateway;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(config(upstream.url));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });
  beforeEach(() => {
    assert.equal(upstream.pendingCount(), 0);
  });

  async function post(body: Json): Promise<{ status: number; json: Json; headers: Headers; text: string }> {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'anthropic/claude', ...body }),
    });
    const raw = await res.text();
    return { status: res.status, json: body.stream ? {} : (JSON.parse(raw) as Json), headers: res.headers, text: raw };
  }

  /** Send `body`, answered by `reply` (default: a plain text message); returns the upstream body. */
  async function sent(body: Json, reply: Json = OK): Promise<Json> {
    upstream.enqueue({ json: reply });
    const res = await post(body);
    assert.equal(res.status, 200, res.text);
    return upstream.requests.at(-1)!.json as Json;
  }

  async function detailOf(id: string): Promise<Json> {
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    return JSON.parse(row.detail) as Json;
  }

  test('URL, headers and the minimal body (base_url ending in /v1 is not doubled)', async () => {
    upstream.enqueue({ json: OK });
    const res = await post({ messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.status, 200);
    const req = upstream.requests.at(-1)!;
    assert.equal(req.path, '/v1/messages');
    assert.equal(req.headers['x-api-key'], 'k');
    assert.equal(req.headers['anthropic-version'], '2023-06-01');
    assert.equal(req.headers['content-type'], 'application/json');
    assert.deepEqual(req.json, { model: 'claude-sonnet-4-5', max_tokens: 4096, messages: [user(text('hi'))] });
    assert.equal(res.json.choices[0].message.content, 'ok');
    assert.equal(res.json.choices[0].finish_reason, 'stop');
    assert.deepEqual(res.json.usage.prompt_tokens, 10);
    assert.deepEqual(validateChatCompletion(res.json), []);
  });

  test('a base_url without /v1 and with a trailing slash gets /v1/messages; provider headers are sent', async () => {
    upstream.enqueue({ json: OK });
    const res = await post({ model: 'anthropic/claude-root', messages: [{ role: 'user', content: 'hi' }], stream: true });
    assert.equal(res.status, 200);
    const req = upstream.requests.at(-1)!;
    assert.equal(req.path, '/v1/messages');
    assert.equal(req.headers['x-api-key'], 'k2');
    assert.equal(req.headers['anthropic-beta'], 'output-128k-2025-02-19');
    assert.deepEqual(req.json, { model: 'claude-haiku-4-5', max_tokens: 4096, messages: [user(text('hi'))], stream: true });
  });

  test('consecutive turns of one role are merged', async () => {
    const body = await sent({
      messages: [
        { role: 'user', content: 'a' },
        { role: 'user', content: [{ type: 'text', text: 'b' }, { type: 'text', text: 'c' }] },
        { role: 'assistant', content: 'd' },
        { role: 'assistant', content: [{ type: 'text', text: 'e' }] },
        { role: 'user', content: 'f' },
      ],
    });
    assert.deepEqual(body.messages, [user(text('a'), text('b'), text('c')), assistant(text('d'), text('e')), user(text('f'))]);
  });

  test('system messages anywhere (and developer messages) are hoisted into system, in order', async () => {
    const body = await sent({
      messages: [
        { role: 'system', content: 'S1' },
        { role: 'user', content: 'u1' },
        { role: 'developer', content: 'D' },
        { role: 'user', content: 'u2' },
        { role: 'system', content: [{ type: 'text', text: 'S2' }] },
        { role: 'assistant', content: 'a' },
        { role: 'user', content: 'u3' },
      ],
    });
    assert.deepEqual(body.system, [text('S1'), text('D'), text('S2')]);
    assert.deepEqual(body.messages, [user(text('u1'), text('u2')), assistant(text('a')), user(text('u3'))]);
  });

  test('tool calls: empty and null content add no text block, "" arguments read as {}, tool results grouped first in the next user turn', async () => {
    const body = await sent({
      tools: [WEATHER_TOOL, TIME_TOOL],
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome, and the time?' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '18C' },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '25C' }] },
        { role: 'user', content: 'And the time?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_3', type: 'function', function: { name: 'get_time', arguments: '' } }] },
        { role: 'tool', tool_call_id: 'call_3', content: '12:00' },
      ],
    });
    assert.deepEqual(body.messages, [
      user(text('Weather in Paris and Rome, and the time?')),
      assistant({ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }, { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Rome' } }),
      user({ type: 'tool_result', tool_use_id: 'call_1', content: '18C' }, { type: 'tool_result', tool_use_id: 'call_2', content: [text('25C')] }, text('And the time?')),
      assistant({ type: 'tool_use', id: 'call_3', name: 'get_time', input: {} }),
      user({ type: 'tool_result', tool_use_id: 'call_3', content: '12:00' }),
    ]);
    assert.deepEqual(body.tools, [WEATHER_WIRE, TIME_WIRE]);
    assert.equal(body.tool_choice, undefined);
  });

  test('invalid tool-call arguments are a 400 naming the field', async () => {
    const res = await post({
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_time', arguments: '{}' } }, { id: 'c2', type: 'function', function: { name: 'get_time', arguments: '{"a":' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'x' },
        { role: 'tool', tool_call_id: 'c2', content: 'y' },
      ],
      tools: [TIME_TOOL],
    });
    assert.equal(res.status, 400);
    assert.equal(res.json.error.code, 'invalid_request');
    assert.equal(res.json.error.param, 'messages[1].tool_calls[1].function.arguments');
    assert.equal(res.json.error.message, 'messages[1].tool_calls[1].function.arguments: is not valid JSON');
  });

  test('images: a data URL becomes a base64 source, an http URL a url source', async () => {
    const body = await sent({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Compare' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'high' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    });
    assert.deepEqual(body.messages, [
      user(
        text('Compare'),
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
      ),
    ]);
  });

  test('an unsupported image type is a 400 naming the part', async () => {
    const res = await post({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/bmp;base64,Qk0=' } }] }] });
    assert.equal(res.status, 400);
    assert.equal(res.json.error.code, 'invalid_request');
    assert.equal(res.json.error.param, 'messages[0].content[0].image_url.url');
  });

  test('PDFs: a file part with a data URL or raw base64 becomes a document block', async () => {
    const body = await sent({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0xLjQK' } },
            { type: 'file', file: { filename: 'b.pdf', file_data: 'JVBERi0xLjcK' } },
            { type: 'text', text: 'Summarise both' },
          ],
        },
      ],
    });
    assert.deepEqual(body.messages, [
      user(
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQK' } },
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjcK' } },
        text('Summarise both'),
      ),
    ]);
  });

  test('tool_choice: named → tool, none → none (tools kept)', async () => {
    const named = await sent({ messages: [{ role: 'user', content: 'x' }], tools: [WEATHER_TOOL, TIME_TOOL], tool_choice: { type: 'function', function: { name: 'get_time' } } });
    assert.deepEqual(named.tool_choice, { type: 'tool', name: 'get_time' });
    assert.deepEqual(named.tools, [WEATHER_WIRE, TIME_WIRE]);
    const none = await sent({ messages: [{ role: 'user', content: 'x' }], tools: [WEATHER_TOOL], tool_choice: 'none' });
    assert.deepEqual(none.tool_choice, { type: 'none' });
    assert.deepEqual(none.tools, [WEATHER_WIRE]);
  });

  test('tool_choice required → any; parallel_tool_calls false → disable_parallel_tool_use', async () => {
    const required = await sent({ messages: [{ role: 'user', content: 'x' }], tools: [WEATHER_TOOL], tool_choice: 'required', parallel_tool_calls: false });
    assert.deepEqual(required.tool_choice, { type: 'any', disable_parallel_tool_use: true });
    const auto = await sent({ messages: [{ role: 'user', content: 'x' }], tools: [WEATHER_TOOL], tool_choice: 'auto' });
    assert.deepEqual(auto.tool_choice, { type: 'auto' });
    const noChoice = await sent({ messages: [{ role: 'user', content: 'x' }], tools: [WEATHER_TOOL], parallel_tool_calls: false });
    assert.deepEqual(noChoice.tool_choice, { type: 'auto', disable_parallel_tool_use: true });
  });

  test('stop → stop_sequences; top_p and top_k pass; user → metadata.user_id', async () => {
    const one = await sent({ messages: [{ role: 'user', content: 'x' }], stop: 'END' });
    assert.deepEqual(one.stop_sequences, ['END']);
    const body = await sent({ messages: [{ role: 'user', content: 'x' }], stop: ['a', 'b'], top_p: 0.9, top_k: 40, temperature: 0.3, user: 'user-42' });
    assert.deepEqual(body, {
      model: 'claude-sonnet-4-5',
      max_tokens: 4096,
      messages: [user(text('x'))],
      stop_sequences: ['a', 'b'],
      top_p: 0.9,
      top_k: 40,
      temperature: 0.3,
      metadata: { user_id: 'user-42' },
    });
  });

  test('temperature above 1 is clamped to 1, with a warning in the generation record', async () => {
    upstream.enqueue({ json: OK });
    const res = await post({ messages: [{ role: 'user', content: 'x' }], temperature: 1.7 });
    assert.equal(res.status, 200);
    assert.equal((upstream.requests.at(-1)!.json as Json).temperature, 1);
    const detail = await detailOf(res.json.id as string);
    assert.deepEqual(detail.warnings, ['temperature 1.7 clamped to 1 (Anthropic accepts 0 to 1)']);
    assert.deepEqual(detail.dropped_parameters, []);
  });

  test('unsupported and non-Anthropic parameters are dropped and recorded', async () => {
    upstream.enqueue({ json: OK });
    const res = await post({ model: 'anthropic/claude-root', messages: [{ role: 'user', content: 'x' }], top_p: 0.5, seed: 7, frequency_penalty: 0.2, temperature: 0.5 });
    assert.equal(res.status, 200);
    assert.deepEqual(upstream.requests.at(-1)!.json, { model: 'claude-haiku-4-5', max_tokens: 4096, messages: [user(text('x'))], temperature: 0.5 });
    const detail = await detailOf(res.json.id as string);
    assert.deepEqual(detail.dropped_parameters, ['top_p', 'seed', 'frequency_penalty']);
  });

  test('max_tokens: the request limit, else the endpoint max_completion_tokens, else 4096', async () => {
    assert.equal((await sent({ messages: [{ role: 'user', content: 'x' }] })).max_tokens, 4096);
    assert.equal((await sent({ model: 'anthropic/claude-capped', messages: [{ role: 'user', content: 'x' }] })).max_tokens, 8192);
    assert.equal((await sent({ model: 'anthropic/claude-capped', messages: [{ role: 'user', content: 'x' }], max_tokens: 100 })).max_tokens, 100);
    assert.equal((await sent({ messages: [{ role: 'user', content: 'x' }], max_tokens: 50, max_completion_tokens: 300 })).max_tokens, 300);
  });

  test('reasoning effort → OpenRouter budget (share of max_tokens in [1024, 128000]), summarized; temperature left out', async () => {
    const high = await sent({ messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'high' });
    assert.deepEqual(high.thinking, { type: 'enabled', budget_tokens: 3276, display: 'summarized' });
    assert.equal(high.max_tokens, 4096);
    const max = await sent({ messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'max', max_tokens: 150_000 });
    assert.deepEqual(max.thinking, { type: 'enabled', budget_tokens: 128_000, display: 'summarized' });
    assert.equal(max.max_tokens, 150_000);
    const low = await sent({ messages: [{ role: 'user', content: 'x' }], reasoning: { effort: 'low' }, max_tokens: 5000 });
    assert.deepEqual(low.thinking, { type: 'enabled', budget_tokens: 1024, display: 'summarized' });
    assert.equal(low.max_tokens, 5000);
    const medium = await sent({ messages: [{ role: 'user', content: 'x' }], reasoning: { enabled: true } });
    assert.deepEqual(medium.thinking, { type: 'enabled', budget_tokens: 2048, display: 'summarized' });
    assert.equal(medium.max_tokens, 4096);
    const minimal = await sent({ messages: [{ role: 'user', content: 'x' }], reasoning: { effort: 'minimal' }, max_tokens: 1000 });
    assert.deepEqual(minimal.thinking, { type: 'enabled', budget_tokens: 1024, display: 'summarized' });
    assert.equal(minimal.max_tokens, 2024, 'max_tokens must stay above the budget');
    const small = await sent({ messages: [{ role: 'user', content: 'x' }], reasoning: { max_tokens: 500 } });
    assert.deepEqual(small.thinking, { type: 'enabled', budget_tokens: 1024, display: 'summarized' });
    const off = await sent({ messages: [{ role: 'user', content: 'x' }], reasoning: { effort: 'high', enabled: false } });
    assert.equal(off.thinking, undefined);
    const none = await sent({ messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'none' });
    assert.equal(none.thinking, undefined);

    upstream.enqueue({ json: OK });
    const res = await post({ messages: [{ role: 'user', content: 'x' }], reasoning: { effort: 'medium', exclude: true }, temperature: 0.2, tools: [WEATHER_TOOL], tool_choice: 'required' });
    const body = upstream.requests.at(-1)!.json as Json;
    assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: 2048, display: 'omitted' });
    assert.equal(body.temperature, undefined);
    assert.deepEqual(body.tool_choice, { type: 'auto' });
    const detail = await detailOf(res.json.id as string);
    assert.deepEqual(detail.warnings, [
      'temperature 0.2 not sent: Anthropic does not accept it with extended thinking',
      'tool_choice "any" changed to "auto": Anthropic does not allow forcing tool use with extended thinking',
    ]);
  });

  test('cache_control on text parts is passed onto the blocks', async () => {
    const cc = { type: 'ephemeral' };
    const body = await sent({
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Long system prompt', cache_control: cc }] },
        { role: 'user', content: [{ type: 'text', text: 'Long document', cache_control: { type: 'ephemeral', ttl: '1h' } }, { type: 'text', text: 'Question' }] },
      ],
    });
    assert.deepEqual(body.system, [text('Long system prompt', { cache_control: cc })]);
    assert.deepEqual(body.messages, [user(text('Long document', { cache_control: { type: 'ephemeral', ttl: '1h' } }), text('Question'))]);
  });

  const SCHEMA = { type: 'object', properties: { city: { type: 'string' }, temp: { type: 'number' } }, required: ['city', 'temp'], additionalProperties: false };
  const RESPONSE_FORMAT = { type: 'json_schema', json_schema: { name: 'weather', schema: SCHEMA } };
  const JSON_TOOL_WIRE = { name: 'json_response', description: 'Respond with a JSON object matching the "weather" schema.', input_schema: SCHEMA };

  test('response_format json_schema via a forced tool: the client gets JSON content, no tool call, finish stop', async () => {
    const reply = message([{ type: 'tool_use', id: 'toolu_j', name: 'json_response', input: { city: 'Paris', temp: 18 } }], 'tool_use');
    upstream.enqueue({ json: reply });
    const res = await post({ messages: [{ role: 'user', content: 'Weather in Paris as JSON' }], response_format: RESPONSE_FORMAT });
    assert.equal(res.status, 200);
    const body = upstream.requests.at(-1)!.json as Json;
    assert.deepEqual(body.tools, [JSON_TOOL_WIRE]);
    assert.deepEqual(body.tool_choice, { type: 'tool', name: 'json_response' });
    assert.equal(body.output_config, undefined);
    const choice = res.json.choices[0];
    assert.equal(choice.message.content, '{"city":"Paris","temp":18}');
    assert.equal(choice.message.tool_calls, undefined);
    assert.equal(choice.finish_reason, 'stop');
    assert.deepEqual(validateChatCompletion(res.json), []);
  });

  test('response_format via the forced tool, streamed: input deltas become content', async () => {
    const events = [
      { type: 'message_start', message: { id: 'msg_s', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 20, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_j', name: 'json_response', input: {} } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city": "Par' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: 'is", "temp": 18}' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 12 } },
      { type: 'message_stop' },
    ];
    upstream.enqueue({ sse: events.map((e) => JSON.stringify(e)), framing: 'anthropic' });
    const res = await post({ messages: [{ role: 'user', content: 'Weather as JSON' }], response_format: { type: 'json_object' }, stream: true });
    assert.equal(res.status, 200);
    const body = upstream.requests.at(-1)!.json as Json;
    assert.deepEqual(body.tools, [{ name: 'json_response', description: 'Respond with a JSON object.', input_schema: { type: 'object', additionalProperties: true } }]);
    assert.deepEqual(body.tool_choice, { type: 'tool', name: 'json_response' });
    const chunks = sseJsonEvents(res.text);
    for (const c of chunks) assert.deepEqual(validateChatCompletionChunk(c), []);
    const deltas = chunks.map((c) => c.choices[0]?.delta ?? {});
    assert.equal(deltas.map((d) => d.content ?? '').join(''), '{"city": "Paris", "temp": 18}');
    assert.ok(deltas.every((d) => d.tool_calls === undefined));
    assert.deepEqual(chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean), ['stop']);
    assert.deepEqual(chunks.at(-1)!.usage, { prompt_tokens: 20, completion_tokens: 12, total_tokens: 32, cost: chunks.at(-1)!.usage.cost });
  });

  test('response_format json_schema goes native (output_config) where the endpoint lists structured_outputs', async () => {
    const body = await sent({ model: 'anthropic/claude-native', messages: [{ role: 'user', content: 'x' }], response_format: RESPONSE_FORMAT }, message([text('{"city":"Paris","temp":18}')]));
    assert.deepEqual(body.output_config, { format: { type: 'json_schema', schema: SCHEMA } });
    assert.equal(body.tools, undefined);
    assert.equal(body.tool_choice, undefined);
  });

  test('a client tool named like the internal JSON tool is refused', async () => {
    const res = await post({ messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'json_response' } }] });
    assert.equal(res.status, 400);
    assert.equal(res.json.error.param, 'tools[0].function.name');
  });

  test('reasoning.exclude / include_reasoning: false: thinking text the upstream sends anyway reaches no field; signatures stay', async () => {
    const signed = { type: 'reasoning.text', text: '', signature: 'sig-abc==', format: 'anthropic-claude-v1' };
    const opaque = { type: 'reasoning.encrypted', data: 'opaque-xyz', format: 'anthropic-claude-v1' };
    upstream.enqueue({ json: message([{ type: 'thinking', thinking: 'secret plan', signature: 'sig-abc==' }, { type: 'redacted_thinking', data: 'opaque-xyz' }, text('4')]) });
    const plain = await post({ messages: [{ role: 'user', content: 'x' }], reasoning: { effort: 'low', exclude: true } });
    assert.equal(plain.status, 200, plain.text);
    assert.ok(!plain.text.includes('secret'), plain.text);
    assert.equal(plain.json.choices[0].message.content, '4');
    assert.deepEqual(plain.json.choices[0].message.reasoning_details, [signed, opaque]);

    const events = [
      { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'secret plan' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig-abc==' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: '4' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 9 } },
      { type: 'message_stop' },
    ];
    upstream.enqueue({ sse: events.map((e) => JSON.stringify(e)), framing: 'anthropic' });
    const streamed = await post({ messages: [{ role: 'user', content: 'x' }], include_reasoning: false, stream: true });
    assert.equal(streamed.status, 200);
    assert.ok(!streamed.text.includes('secret'), streamed.text);
    const deltas = sseJsonEvents(streamed.text).map((l) => l.choices[0]?.delta ?? {});
    assert.deepEqual(deltas.flatMap((d: Json) => d.reasoning_details ?? []), [signed]);
    assert.equal(deltas.map((d: Json) => d.content ?? '').join(''), '4');
  });

  test('two turns of tool use with thinking: the signed thinking is echoed before the tool_use, the result follows', async () => {
    const turn1 = [
      { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 50, cache_read_input_tokens: 100, cache_creation_input_tokens: 7, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'I should call ' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'get_weather.' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig-abc==' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'redacted_thinking', data: 'opaque-xyz' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'content_block_start', index: 2, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'text_delta', text: 'Checking.' } },
      { type: 'content_block_stop', index: 2 },
      { type: 'content_block_start', index: 3, content_block: { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: {} } },
      { type: 'content_block_delta', index: 3, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
      { type: 'content_block_delta', index: 3, delta: { type: 'input_json_delta', partial_json: ' "Paris"}' } },
      { type: 'content_block_stop', index: 3 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 80 } },
      { type: 'message_stop' },
    ];
    upstream.enqueue({ sse: turn1.map((e) => JSON.stringify(e)), framing: 'anthropic', splitAt: 23 });
    const first = { messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [WEATHER_TOOL], reasoning: { effort: 'low' }, max_tokens: 2000, stream: true };
    const res1 = await post(first);
    assert.equal(res1.status, 200);
    const chunks = sseJsonEvents(res1.text);
    for (const c of chunks) assert.deepEqual(validateChatCompletionChunk(c), []);
    const deltas = chunks.map((c) => c.choices[0]?.delta ?? {});
    const reasoning = deltas.map((d) => d.reasoning ?? '').join('');
    const details = deltas.flatMap((d) => d.reasoning_details ?? []);
    const calls = deltas.flatMap((d) => d.tool_calls ?? []);
    assert.equal(reasoning, 'I should call get_weather.');
    assert.deepEqual(details, [
      { type: 'reasoning.text', text: 'I should call get_weather.', signature: 'sig-abc==', format: 'anthropic-claude-v1' },
      { type: 'reasoning.encrypted', data: 'opaque-xyz', format: 'anthropic-claude-v1' },
    ]);
    // A tool call goes out whole when its block stops (never cut mid-arguments).
    assert.deepEqual(calls, [
      { index: 0, id: 'toolu_01', type: 'function', function: { name: 'get_weather', arguments: '' } },
      { index: 0, function: { arguments: '{"city": "Paris"}' } },
    ]);
    assert.equal(deltas.map((d) => d.content ?? '').join(''), 'Checking.');
    assert.deepEqual(chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean), ['tool_calls']);
    const usage = chunks.at(-1)!.usage as Json;
    assert.deepEqual({ ...usage, cost: 0 }, { prompt_tokens: 157, completion_tokens: 80, total_tokens: 237, prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 7 }, cost: 0 });
    assert.deepEqual((upstream.requests.at(-1)!.json as Json).thinking, { type: 'enabled', budget_tokens: 1024, display: 'summarized' });

    // Turn 2: the client echoes the assistant message (reasoning_details + tool_calls) and the tool result.
    const echoed = {
      role: 'assistant',
      content: 'Checking.',
      reasoning,
      reasoning_details: details,
      tool_calls: [{ id: 'toolu_01', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }],
    };
    const body = await sent(
      { ...first, stream: false, messages: [...first.messages, echoed, { role: 'tool', tool_call_id: 'toolu_01', content: '18C and sunny' }] },
      message([{ type: 'thinking', thinking: 'Answer.', signature: 'sig-2' }, text('It is 18C and sunny in Paris.')]),
    );
    assert.deepEqual(body.messages, [
      user(text('Weather in Paris?')),
      assistant(
        { type: 'thinking', thinking: 'I should call get_weather.', signature: 'sig-abc==' },
        { type: 'redacted_thinking', data: 'opaque-xyz' },
        text('Checking.'),
        { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } },
      ),
      user({ type: 'tool_result', tool_use_id: 'toolu_01', content: '18C and sunny' }),
    ]);
    assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: 1024, display: 'summarized' });
    assert.equal(body.max_tokens, 2000);
  });

  test('turn 2 non-streamed: reasoning, reasoning_details and content of a thinking response', async () => {
    upstream.enqueue({ json: message([{ type: 'thinking', thinking: 'Answer.', signature: 'sig-2' }, { type: 'redacted_thinking', data: 'r2' }, text('It is 18C.')], 'end_turn', { input_tokens: 9, output_tokens: 30, output_tokens_details: { thinking_tokens: 12 } }) });
    const res = await post({ messages: [{ role: 'user', content: 'x' }], reasoning: { effort: 'low' } });
    const msg = res.json.choices[0].message as Json;
    assert.equal(msg.content, 'It is 18C.');
    assert.equal(msg.reasoning, 'Answer.');
    assert.deepEqual(msg.reasoning_details, [
      { type: 'reasoning.text', text: 'Answer.', signature: 'sig-2', format: 'anthropic-claude-v1' },
      { type: 'reasoning.encrypted', data: 'r2', format: 'anthropic-claude-v1' },
    ]);
    assert.deepEqual({ ...res.json.usage, cost: 0 }, { prompt_tokens: 9, completion_tokens: 30, total_tokens: 39, completion_tokens_details: { reasoning_tokens: 12 }, cost: 0 });
    assert.deepEqual(validateChatCompletion(res.json), []);
  });

  test('reasoning details of another provider are not sent to Anthropic', async () => {
    const body = await sent({
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: 'y', reasoning_details: [{ type: 'reasoning.text', text: 't', signature: 'gsig', format: 'google-gemini-v1' }, { type: 'reasoning.text', text: 'unsigned' }] },
        { role: 'user', content: 'z' },
      ],
    });
    assert.deepEqual(body.messages, [user(text('x')), assistant(text('y')), user(text('z'))]);
  });
});
