/**
 * POST /v1/responses and GET /v1/responses/{id} with the official `openai` SDK, against
 * upstreams on port 0: an `openai`-kind one (recorded chat streams and scripted ones) and an
 * `anthropic`-kind one (translation). Every body and stream event is validated against
 * OpenAI's OpenAPI document (`Response`, `ResponseStreamEvent`) and the Open Responses one
 * (`ResponseResource`, the `*StreamingEvent` schemas); test/ingress/responses-schema.test.ts covers the
 * two documents case by case.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { parseConfig } from '../../src/config/load.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { fixturesAvailable, loadChunks, loadJson, startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { validateErrorResponse, validateResponse as validateOpenAIResponse, validateResponseStreamEvent } from '../helpers/openapi.js';
import { validateOpenResponsesResource, validateOpenResponsesStreamEvent } from '../helpers/open-responses.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** An OpenAI chat stream chunk with one choice delta. */
const chunk = (delta: Json, finish: string | null = null, usage: Json | null = null) =>
  JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [{ index: 0, delta, finish_reason: finish }], usage });
const usageChunk = (prompt: number, completion: number, extra: Json = {}) =>
  JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, ...extra } });

/** A chat stream that calls `get_weather` with `{"city":"Paris"}` in two argument pieces. */
const toolCallStream = [
  chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
  chunk({}, 'tool_calls'),
  usageChunk(20, 9),
];

const textStream = (text: string, prompt = 10, completion = 4, reasoning?: string) => [
  ...(reasoning ? [chunk({ role: 'assistant', reasoning })] : []),
  chunk({ role: 'assistant', content: text.slice(0, 3) }),
  chunk({ content: text.slice(3) }),
  chunk({}, 'stop'),
  usageChunk(prompt, completion, { prompt_tokens_details: { cached_tokens: 2 }, completion_tokens_details: { reasoning_tokens: reasoning ? 1 : 0 } }),
];

/** A non-streamed chat completion answering `text`. */
const textJson = (text: string, prompt = 10, completion = 4) => ({
  json: { id: 'chatcmpl-2', object: 'chat.completion', created: 1, model: 'upstream-model', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } },
});

const weatherTool = { type: 'function' as const, name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }, strict: true };

/** Errors of a Responses object under both documents (`[]` when valid under both). */
function validateResponse(value: unknown): string[] {
  return [...validateOpenAIResponse(value).map((e) => `OpenAI: ${e}`), ...validateOpenResponsesResource(value).map((e) => `Open Responses: ${e}`)];
}

function assertValidEvents(events: Json[]): void {
  events.forEach((e, i) => {
    assert.deepEqual(validateResponseStreamEvent(e), [], `event ${i} (${e.type}) is not a valid ResponseStreamEvent`);
    assert.deepEqual(validateOpenResponsesStreamEvent(e), [], `event ${i} (${e.type}) is not a valid Open Responses stream event`);
    assert.equal(e.sequence_number, i, `event ${i} sequence_number`);
  });
}

describe('POST /v1/responses', () => {
  let upstream: Upstream;
  let anthropic: Upstream;
  let gw: TestGateway;
  let client: OpenAI;
  let other: OpenAI;

  before(async () => {
    upstream = await startUpstream();
    anthropic = await startUpstream();
    gw = await startGateway({
      retention: 7,
      providers: [
        { id: 'up', kind: 'openai', base_url: upstream.url, api_key: 'sk-upstream' },
        { id: 'claude', kind: 'anthropic', base_url: anthropic.url, api_key: 'sk-ant' },
      ],
      models: [
        {
          id: 'test/model',
          context_length: 8192,
          endpoints: [{ provider: 'up', upstream_model: 'upstream-model', pricing: { prompt: 1, completion: 2 }, supported_parameters: ['temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'tools', 'tool_choice', 'response_format', 'reasoning', 'parallel_tool_calls'] }],
        },
        { id: 'test/native', context_length: 8192, endpoints: [{ provider: 'up', upstream_model: 'gpt-native', supports_responses: true, max_completion_tokens: 1000, pricing: { prompt: 1, completion: 2 }, supported_parameters: ['tools', 'tool_choice', 'reasoning', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'response_format'] }] },
        { id: 'test/claude', context_length: 200000, endpoints: [{ provider: 'claude', upstream_model: 'claude-x', max_completion_tokens: 4096, supported_parameters: ['temperature', 'max_tokens', 'tools', 'tool_choice', 'reasoning'] }] },
      ],
    });
    const a = await gw.createKey('a');
    const b = await gw.createKey('b');
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: a.secret, maxRetries: 0 });
    other = new OpenAI({ baseURL: gw.baseURL, apiKey: b.secret, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    await anthropic?.close();
  });

  test('create: a recorded chat answer as a Response, id = generation id, usage in the Responses shape', { skip: !fixturesAvailable() && 'needs ../shared/fixtures' }, async () => {
    upstream.enqueue({ json: loadJson('openai/openai-text.json') });
    const { data: res, response: http } = await client.responses.create({ model: 'test/model', input: 'Invent a holiday', instructions: 'Be brief', metadata: { run: 'r1' } }).withResponse();
    assert.deepEqual(validateResponse(res), []);
    assert.match(res.id, /^gen_/);
    assert.equal(http.headers.get('x-op-generation-id'), res.id);
    assert.equal(res.status, 'completed');
    assert.equal(res.model, 'test/model');
    assert.ok(res.output_text.startsWith('**Holiday Name:** Galaxy Day'));
    assert.equal(res.output.length, 1);
    assert.equal(res.output[0]!.type, 'message');
    assert.match(res.output[0]!.id!, /^msg_/);
    assert.notEqual(res.output[0]!.id, res.id);
    assert.deepEqual(res.usage, { input_tokens: 16, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 363, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 379, cost: 0.000742 } as unknown);
    assert.deepEqual(res.metadata, { run: 'r1' });
    assert.equal((res as Json).store, true);
    const sent = upstream.requests.at(-1)!.json as Json;
    assert.deepEqual(sent.messages, [{ role: 'system', content: 'Be brief' }, { role: 'user', content: 'Invent a holiday' }]);
    assert.equal(sent.model, 'upstream-model');
    assert.equal(sent.metadata, undefined);
  });

  test('stream: a function call, every event in order and valid, then the tool result round trip', async () => {
    upstream.enqueue({ sse: toolCallStream });
    const stream = client.responses.stream({ model: 'test/model', input: [{ role: 'user', content: 'Weather in Paris?' }], tools: [weatherTool], tool_choice: 'auto', store: false });
    const events: Json[] = [];
    for await (const e of stream) events.push(e as Json);
    const final = await stream.finalResponse();
    assertValidEvents(events);
    assert.deepEqual(
      events.map((e) => e.type),
      ['response.created', 'response.in_progress', 'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done', 'response.completed'],
    );
    assert.deepEqual(validateResponse(final), []);
    const call = final.output[0] as Json;
    assert.equal(call.type, 'function_call');
    assert.equal(call.call_id, 'call_w1');
    assert.equal(call.name, 'get_weather');
    assert.equal(call.arguments, '{"city":"Paris"}');
    assert.match(call.id, /^fc_/);
    assert.equal((final as Json).store, false);
    assert.equal(final.usage?.input_tokens, 20);
    const sent = upstream.requests.at(-1)!.json as Json;
    assert.deepEqual(sent.tools, [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: weatherTool.parameters, strict: true } }]);
    assert.equal(sent.tool_choice, 'auto');

    // Second turn: the client sends the call and its output back as items.
    upstream.enqueue(textJson('It is sunny.'));
    const second = await client.responses.create({
      model: 'test/model',
      input: [{ role: 'user', content: 'Weather in Paris?' }, { type: 'function_call', call_id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' }, { type: 'function_call_output', call_id: 'call_w1', output: '{"sky":"sunny"}' }],
      tools: [weatherTool],
      store: false,
    });
    assert.equal(second.output_text, 'It is sunny.');
    const history = (upstream.requests.at(-1)!.json as Json).messages;
    assert.deepEqual(history, [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_w1', content: '{"sky":"sunny"}' },
    ]);
  });

  test('stream: reasoning summary then text, usage details reported', async () => {
    upstream.enqueue({ sse: textStream('Answer!', 12, 6, 'thinking...') });
    const stream = client.responses.stream({ model: 'test/model', input: 'Q', reasoning: { effort: 'low', summary: 'auto' }, store: false });
    const events: Json[] = [];
    for await (const e of stream) events.push(e as Json);
    assertValidEvents(events);
    assert.deepEqual(
      events.map((e) => e.type),
      [
        'response.created', 'response.in_progress',
        'response.output_item.added', 'response.reasoning_summary_part.added', 'response.reasoning_summary_text.delta', 'response.reasoning_summary_text.done', 'response.reasoning_summary_part.done', 'response.output_item.done',
        'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
        'response.completed',
      ],
    );
    const final = events.at(-1)!.response as Json;
    assert.equal(final.output[0].summary[0].text, 'thinking...');
    assert.match(final.output[0].id, /^rs_/);
    assert.equal(final.output_text, 'Answer!');
    assert.deepEqual(final.usage.input_tokens_details, { cached_tokens: 2, cache_write_tokens: 0 });
    assert.deepEqual(final.usage.output_tokens_details, { reasoning_tokens: 1 });
    assert.deepEqual((upstream.requests.at(-1)!.json as Json).reasoning_effort ?? (upstream.requests.at(-1)!.json as Json).reasoning?.effort, 'low');
  });

  test('structured output: text.format json_schema goes upstream as response_format', async () => {
    upstream.enqueue(textJson('{"city":"Paris"}'));
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
    const res = await client.responses.create({ model: 'test/model', input: 'Where?', text: { format: { type: 'json_schema', name: 'place', schema, strict: true } }, max_output_tokens: 50, store: false });
    assert.deepEqual(validateResponse(res), []);
    assert.deepEqual(JSON.parse(res.output_text), { city: 'Paris' });
    assert.deepEqual((res.text as Json).format, { type: 'json_schema', name: 'place', schema, strict: true });
    const sent = upstream.requests.at(-1)!.json as Json;
    assert.deepEqual(sent.response_format, { type: 'json_schema', json_schema: { name: 'place', schema, strict: true } });
    assert.equal(sent.max_completion_tokens ?? sent.max_tokens, 50);
  });

  test('previous_response_id continues a stored conversation; GET returns it to its owner only', async () => {
    upstream.enqueue(textJson('Hi Ada!'));
    const first = await client.responses.create({ model: 'test/model', input: 'My name is Ada', instructions: 'Be nice', stream: false });
    assert.equal((first as Json).store, true);
    upstream.enqueue({ sse: textStream('Ada.') });
    const stream = client.responses.stream({ model: 'test/model', input: 'What is my name?', previous_response_id: first.id });
    for await (const e of stream) void e;
    const second = await stream.finalResponse();
    assert.equal(second.previous_response_id, first.id);
    assert.deepEqual((upstream.requests.at(-1)!.json as Json).messages, [
      { role: 'user', content: 'My name is Ada' },
      { role: 'assistant', content: 'Hi Ada!' },
      { role: 'user', content: 'What is my name?' },
    ]);
    // A third turn chains through both.
    upstream.enqueue(textJson('Bye.'));
    await client.responses.create({ model: 'test/model', input: 'Bye', previous_response_id: second.id });
    assert.equal(((upstream.requests.at(-1)!.json as Json).messages as Json[]).length, 5);

    const got = await client.responses.retrieve(second.id);
    assert.deepEqual(validateResponse(got), []);
    assert.equal(got.id, second.id);
    assert.equal(got.output_text, 'Ada.');
    await assert.rejects(other.responses.retrieve(second.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    await assert.rejects(other.responses.delete(second.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    await client.responses.delete(second.id);
    await assert.rejects(client.responses.retrieve(second.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    await assert.rejects(other.responses.create({ model: 'test/model', input: 'x', previous_response_id: first.id }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.NotFoundError);
      assert.equal((err.error as Json).param, 'previous_response_id');
      return true;
    });
  });

  test('retention none: store: true and previous_response_id are a 400 saying why; unset store is not stored', async () => {
    const none = { op: { retention: 'none' } } as Json;
    await assert.rejects(client.responses.create({ model: 'test/model', input: 'x', store: true, ...none }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.BadRequestError);
      assert.equal((err.error as Json).code, 'response_store_disabled');
      assert.equal((err.error as Json).param, 'store');
      assert.match(err.message, /retention is "none"/);
      assert.deepEqual(validateErrorResponse({ error: err.error }), []);
      return true;
    });
    await assert.rejects(client.responses.create({ model: 'test/model', input: 'x', previous_response_id: 'gen_x', ...none }), (err: unknown) => err instanceof OpenAI.BadRequestError && (err.error as Json).param === 'previous_response_id');
    upstream.enqueue(textJson('ok'));
    const res = await client.responses.create({ model: 'test/model', input: 'x', ...none });
    assert.equal((res as Json).store, false);
    await assert.rejects(client.responses.retrieve(res.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
  });

  test('bad input: a clear 400 naming the param', async () => {
    await assert.rejects(client.responses.create({ model: 'test/model', input: [{ type: 'web_search_call', id: 'x' } as never] }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.BadRequestError);
      assert.equal((err.error as Json).param, 'input[0].type');
      return true;
    });
    await assert.rejects(client.responses.create({ model: 'test/model', input: 'x', tools: [{ name: 'f' } as never] }), (err: unknown) => err instanceof OpenAI.BadRequestError && (err.error as Json).param === 'tools[0].type');
    await assert.rejects(client.responses.create({ model: 'test/model', input: 'x', tools: [{ type: 'function', name: 'f', parameters: 'no' } as never] }), (err: unknown) => err instanceof OpenAI.BadRequestError && (err.error as Json).param === 'tools[0].parameters');
    const wrongMethod = await fetch(`${gw.baseURL}/responses`, { headers: { authorization: `Bearer ${gw.adminKey}` } });
    assert.equal(wrongMethod.status, 405);
    await assert.rejects(client.responses.create({ model: 'test/model', input: 'x', temperature: 3 }), (err: unknown) => err instanceof OpenAI.BadRequestError && (err.error as Json).param === 'temperature');
  });

  test('translation: namespace tools flattened (calls carry their namespace), hosted tools and untranslated fields reported in the record', async () => {
    upstream.enqueue({ sse: [chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_ns', type: 'function', function: { name: 'close_agent', arguments: '{}' } }] }), chunk({}, 'tool_calls'), usageChunk(5, 2)] });
    const body = {
      model: 'test/model',
      input: 'x',
      stream: true,
      store: false,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'abc',
      tools: [weatherTool, { type: 'namespace', name: 'agents', description: 'sub-agents', tools: [{ type: 'function', name: 'close_agent', parameters: { type: 'object', properties: {} } }] }, { type: 'web_search', external_web_access: false }],
    };
    const stream = client.responses.stream(body as never);
    const events: Json[] = [];
    for await (const e of stream) events.push(e as Json);
    assertValidEvents(events);
    const final = events.at(-1)!.response as Json;
    assert.deepEqual({ name: final.output[0].name, namespace: final.output[0].namespace }, { name: 'close_agent', namespace: 'agents' });
    assert.deepEqual(((upstream.requests.at(-1)!.json as Json).tools as Json[]).map((t) => t.function.name), ['get_weather', 'close_agent']);
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', final.id).executeTakeFirstOrThrow();
    assert.deepEqual(JSON.parse(row.detail).warnings, ['hosted tools dropped (translation carries function tools only): tools[2] (web_search)', 'Responses fields not translated: include, prompt_cache_key']);
  });

  test('reasoning that uses the whole output limit: reasoning_exhausted_output_limit naming max_output_tokens', async () => {
    upstream.enqueue({ json: { id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: null, reasoning: 'hmm…' }, finish_reason: 'length' }], usage: { prompt_tokens: 5, completion_tokens: 16, total_tokens: 21 } } });
    await assert.rejects(client.responses.create({ model: 'test/model', input: 'x', max_output_tokens: 16, store: false }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal((err.error as Json).code, 'reasoning_exhausted_output_limit');
      assert.equal((err.error as Json).param, 'max_output_tokens');
      return true;
    });
  });

  test('a stream that fails after its first byte ends with error and response.failed', async () => {
    const pieces = textStream('Hello world');
    upstream.enqueue({ sse: pieces.slice(0, 2), done: false, destroyAfterBytes: 10_000 });
    const res = await fetch(`${gw.baseURL}/responses`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', input: 'x', stream: true, store: false }) });
    const text = await res.text();
    const events = text.split('\n\n').filter((b) => b.includes('data: ')).map((b) => JSON.parse(b.slice(b.indexOf('data: ') + 6)) as Json);
    assertValidEvents(events);
    assert.deepEqual(events.slice(-2).map((e) => e.type), ['error', 'response.failed']);
    assert.equal(events.at(-2)!.code, 'upstream_connection_failed');
    assert.equal(events.at(-1)!.response.status, 'failed');
    assert.equal(events.at(-1)!.response.error.code, 'server_error');
  });

  test('anthropic upstream by translation: recorded Messages stream as Responses events', { skip: !fixturesAvailable() && 'needs ../shared/fixtures' }, async () => {
    anthropic.enqueue({ sse: loadChunks('anthropic/anthropic-text.chunks.txt'), framing: 'anthropic' });
    const stream = client.responses.stream({ model: 'test/claude', input: 'Invent a holiday', instructions: 'Be brief', max_output_tokens: 1000, store: false });
    const events: Json[] = [];
    for await (const e of stream) events.push(e as Json);
    assertValidEvents(events);
    const final = await stream.finalResponse();
    assert.ok(final.output_text.length > 10);
    assert.equal(final.output_text, events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join(''));
    const sent = anthropic.requests.at(-1)!.json as Json;
    assert.equal(anthropic.requests.at(-1)!.path, '/v1/messages');
    assert.equal(sent.system?.[0]?.text ?? sent.system, 'Be brief');
    assert.equal(sent.max_tokens, 1000);
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', final.id).executeTakeFirstOrThrow();
    assert.equal(row.api, 'responses');
    assert.equal(row.provider, 'claude');
    assert.equal(row.status, 'success');
  });

  test('anthropic thinking: its signature rides in the reasoning item and goes back as a thinking block next turn', { skip: !fixturesAvailable() && 'needs ../shared/fixtures' }, async () => {
    anthropic.enqueue({ sse: loadChunks('anthropic/anthropic-clear-thinking.1.chunks.txt'), framing: 'anthropic' });
    const stream = client.responses.stream({ model: 'test/claude', input: 'Think, then answer', reasoning: { effort: 'low' }, max_output_tokens: 3000, store: false });
    const events: Json[] = [];
    for await (const e of stream) events.push(e as Json);
    assertValidEvents(events);
    const final = await stream.finalResponse();
    const reasoning = final.output.find((i) => i.type === 'reasoning') as Json;
    assert.ok(reasoning.summary[0].text.length > 0);
    assert.match(reasoning.encrypted_content, /^opr1\./);
    const signature = loadChunks('anthropic/anthropic-clear-thinking.1.chunks.txt').map((l) => JSON.parse(l) as Json).find((e) => e.delta?.type === 'signature_delta')!.delta.signature;

    anthropic.enqueue({ json: loadJson('anthropic/anthropic-text.json') });
    await client.responses.create({ model: 'test/claude', input: [{ role: 'user', content: 'Think, then answer' }, ...(final.output as never[]), { role: 'user', content: 'And now?' }], max_output_tokens: 3000, store: false, reasoning: { effort: 'low' } });
    const assistant = ((anthropic.requests.at(-1)!.json as Json).messages as Json[]).find((m) => m.role === 'assistant')!;
    const thinking = (assistant.content as Json[]).find((b) => b.type === 'thinking');
    assert.equal(thinking?.signature, signature);
    assert.equal(thinking?.thinking, reasoning.summary[0].text);
  });

  describe('native lane: an openai endpoint with supports_responses', () => {
    const usage = { input_tokens: 30, input_tokens_details: { cached_tokens: 8 }, output_tokens: 12, output_tokens_details: { reasoning_tokens: 5 }, total_tokens: 42 };
    const upstreamResponse = (status: string, output: Json[]) => ({ id: 'resp_up1', object: 'response', created_at: 1, status, model: 'gpt-native', output, usage });
    const reasoningItem = { id: 'rs_up', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Plan.' }], encrypted_content: 'ENC-OPAQUE' };
    const callItem = { id: 'fc_up', type: 'function_call', call_id: 'call_n1', name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' };
    const events = [
      { type: 'response.created', response: upstreamResponse('in_progress', []), sequence_number: 0 },
      { type: 'response.output_item.added', output_index: 0, item: { ...reasoningItem, summary: [], encrypted_content: null }, sequence_number: 1 },
      { type: 'response.reasoning_summary_part.added', item_id: 'rs_up', output_index: 0, summary_index: 0, part: { type: 'summary_text', text: '' }, sequence_number: 2 },
      { type: 'response.reasoning_summary_text.delta', item_id: 'rs_up', output_index: 0, summary_index: 0, delta: 'Plan.', sequence_number: 3 },
      { type: 'response.output_item.done', output_index: 0, item: reasoningItem, sequence_number: 4 },
      { type: 'response.output_item.added', output_index: 1, item: { ...callItem, arguments: '', status: 'in_progress' }, sequence_number: 5 },
      { type: 'response.function_call_arguments.delta', item_id: 'fc_up', output_index: 1, delta: '{"city":', sequence_number: 6 },
      { type: 'response.function_call_arguments.delta', item_id: 'fc_up', output_index: 1, delta: '"Oslo"}', sequence_number: 7 },
      { type: 'response.output_item.done', output_index: 1, item: callItem, sequence_number: 8 },
      { type: 'response.completed', response: upstreamResponse('completed', [reasoningItem, callItem]), sequence_number: 9 },
    ].map((e) => JSON.stringify(e));

    test('stream: the client body goes upstream as it came (model name, store, gateway fields edited); events re-encoded, usage recorded', async () => {
      upstream.enqueue({ sse: events, framing: 'anthropic' });
      const body = {
        model: 'test/native',
        input: [{ role: 'user', content: 'Weather in Oslo?' }],
        tools: [weatherTool],
        include: ['reasoning.encrypted_content'],
        prompt_cache_key: 'k1',
        max_output_tokens: 800,
        reasoning: { effort: 'medium', summary: 'auto' },
        op: { tags: ['native'] },
      };
      const stream = client.responses.stream(body as never);
      const seen: Json[] = [];
      for await (const e of stream) seen.push(e as Json);
      assertValidEvents(seen);
      const final = seen.at(-1)!.response as Json;
      assert.equal(seen.at(-1)!.type, 'response.completed');
      assert.match(final.id, /^gen_/);
      assert.equal(final.output[0].type, 'reasoning');
      assert.match(final.output[0].encrypted_content, /^opr1\./, 'OpenAI\'s reasoning packed with its item id');
      assert.equal(final.output[0].summary[0].text, 'Plan.');
      assert.deepEqual({ call_id: final.output[1].call_id, name: final.output[1].name, arguments: final.output[1].arguments }, { call_id: 'call_n1', name: 'get_weather', arguments: '{"city":"Oslo"}' });
      assert.deepEqual(final.usage.input_tokens_details, { cached_tokens: 8, cache_write_tokens: 0 });

      const sent = upstream.requests.at(-1)!;
      assert.equal(sent.path, '/v1/responses');
      const json = sent.json as Json;
      assert.deepEqual(json, {
        model: 'gpt-native',
        input: [{ role: 'user', content: 'Weather in Oslo?' }],
        tools: [weatherTool],
        include: ['reasoning.encrypted_content'],
        prompt_cache_key: 'k1',
        max_output_tokens: 800,
        reasoning: { effort: 'medium', summary: 'auto' },
        store: false,
        stream: true,
      });
      await gw.flush();
      const row = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', final.id).executeTakeFirstOrThrow();
      assert.equal(row.prompt_tokens, 30);
      assert.equal(row.completion_tokens, 12);
      assert.equal(row.reasoning_tokens, 5);
      assert.equal(row.cached_tokens, 8);
      assert.equal(row.finish_reason, 'tool_calls');
      assert.deepEqual(JSON.parse(row.detail).dropped_parameters, []);

      // The next turn echoes the reasoning item: OpenAI gets its own item id and encrypted content back.
      upstream.enqueue({ json: upstreamResponse('completed', [{ id: 'msg_up', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Cold.', annotations: [] }] }]) });
      const next = await client.responses.create({
        model: 'test/native',
        input: [{ role: 'user', content: 'Weather in Oslo?' }, final.output[0], final.output[1], { type: 'function_call_output', call_id: 'call_n1', output: '-5C' }],
        store: false,
      });
      assert.deepEqual(validateResponse(next), []);
      assert.equal(next.output_text, 'Cold.');
      const input = (upstream.requests.at(-1)!.json as Json).input as Json[];
      assert.deepEqual({ id: input[1]!.id, encrypted_content: input[1]!.encrypted_content }, { id: 'rs_up', encrypted_content: 'ENC-OPAQUE' });
      assert.equal(input[3]!.output, '-5C');
    });

    test('upstream errors keep the OpenAI envelope', async () => {
      upstream.enqueue({ status: 400, json: { error: { message: 'Invalid input', type: 'invalid_request_error', param: 'input', code: null } } });
      await assert.rejects(client.responses.create({ model: 'test/native', input: 'x', store: false }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.BadRequestError);
        assert.equal((err.error as Json).code, 'upstream_bad_request');
        assert.deepEqual(validateErrorResponse({ error: err.error }), []);
        return true;
      });
    });
  });
});

describe('supports_responses config', () => {
  test('only openai providers may serve /responses natively; the setting is refused at start elsewhere', () => {
    assert.throws(
      () => parseConfig({
        providers: [{ id: 'a', kind: 'anthropic', api_key: 'k' }],
        models: [{ id: 'x/y', context_length: 1000, endpoints: [{ provider: 'a', upstream_model: 'm', supports_responses: true }] }],
      }, 'test'),
      /models\[0\]\.endpoints\[0\]\.supports_responses: only "openai" providers serve the Responses API natively \(this one is "anthropic"/,
    );
    const ok = parseConfig({ providers: [{ id: 'o', kind: 'openai', base_url: 'http://127.0.0.1:1/v1' }], models: [{ id: 'x/y', context_length: 1000, endpoints: [{ provider: 'o', upstream_model: 'm', supports_responses: true }] }] }, 'test');
    assert.equal(ok.models[0]!.endpoints[0]!.supports_responses, true);
  });
});
