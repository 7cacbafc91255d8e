/** The official `openai` SDK against the gateway: tools, structured output, completions, models, typed errors. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { fixturesAvailable, loadChunks, loadJson, startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { validateChatCompletionChunk, validateCompletion, validateErrorResponse, validateModelList } from '../helpers/openapi.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const chunk = (delta: Json, finish: string | null = null, extra: Json = {}) =>
  JSON.stringify({ id: 'up-1', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [{ index: 0, delta, finish_reason: finish }], ...extra });
const usageChunk = (p: number, c: number, extra: Json = {}) =>
  JSON.stringify({ id: 'up-1', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c, ...extra } });

describe('openai SDK through the gateway', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    upstream = await startUpstream();
    const config = oneModelConfig(upstream.url, {
      endpoint: { supports_text_completions: true, supported_parameters: ['tools', 'tool_choice', 'response_format', 'temperature', 'max_tokens', 'max_completion_tokens', 'stop'] },
    });
    config.models.push({
      id: 'test/chat-only',
      name: 'Chat only',
      context_length: 4096,
      endpoints: [{ provider: 'up', upstream_model: 'chat-only-upstream', pricing: { prompt: 1, completion: 2 }, supported_parameters: ['temperature', 'max_tokens', 'stop'] }],
    } as (typeof config.models)[number]);
    gw = await startGateway(config);
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  test('streamed tool calls: the SDK assembles two parallel calls with their arguments', async () => {
    upstream.enqueue({
      sse: [
        chunk({ role: 'assistant', content: null }),
        chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Par' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: 'is"}' } }] }),
        chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{}' } }] }),
        chunk({}, 'tool_calls'),
        usageChunk(50, 20),
      ],
      splitAt: 11,
    });
    const tools = [
      { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
      { type: 'function' as const, function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
    ];
    const stream = client.chat.completions.stream({ model: 'test/model', messages: [{ role: 'user', content: 'weather and time?' }], tools, tool_choice: 'auto' });
    const chunks: Json[] = [];
    stream.on('chunk', (c) => chunks.push(c as unknown as Json));
    const final = await stream.finalChatCompletion();
    const calls = final.choices[0]!.message.tool_calls!.map((t) => (t.type === 'function' ? [t.id, t.function.name, JSON.parse(t.function.arguments)] : []));
    assert.deepEqual(calls, [
      ['call_a', 'get_weather', { city: 'Paris' }],
      ['call_b', 'get_time', {}],
    ]);
    assert.equal(final.choices[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(chunks.at(-1)!.usage, { prompt_tokens: 50, completion_tokens: 20, total_tokens: 70, cost: 0.00009 });
    for (const c of chunks) assert.deepEqual(validateChatCompletionChunk(c), []);
    const sent = upstream.requests.at(-1)!.json as Json;
    assert.deepEqual(sent.tools, tools);
    assert.equal(sent.tool_choice, 'auto');
  });

  test('response_format json_schema is passed through and the JSON content arrives intact', async () => {
    const answer = { name: 'Galaxy Day', month: 10 };
    upstream.enqueue({ json: { id: 'x', object: 'chat.completion', created: 1, model: 'upstream-model', choices: [{ index: 0, message: { role: 'assistant', content: JSON.stringify(answer) }, finish_reason: 'stop' }], usage: { prompt_tokens: 9, completion_tokens: 8, total_tokens: 17 } } });
    const response_format = {
      type: 'json_schema' as const,
      json_schema: { name: 'holiday', strict: true, schema: { type: 'object', properties: { name: { type: 'string' }, month: { type: 'integer' } }, required: ['name', 'month'], additionalProperties: false } },
    };
    const res = await client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: 'invent a holiday' }], response_format });
    assert.deepEqual(JSON.parse(res.choices[0]!.message.content!), answer);
    assert.deepEqual((upstream.requests.at(-1)!.json as Json).response_format, response_format);
  });

  test('text completions: native endpoint, plain and streamed (recorded)', { skip: fixturesAvailable() ? false : 'recordings absent' }, async () => {
    const body = loadJson('openai/openai-completion-text.json') as Json;
    upstream.enqueue({ json: body });
    const res = await client.completions.create({ model: 'test/model', prompt: 'Invent a holiday', max_tokens: 16 });
    assert.equal(res.choices[0]!.text, body.choices[0].text);
    assert.equal(res.choices[0]!.finish_reason, 'length');
    assert.equal(res.object, 'text_completion');
    assert.equal(res.usage!.completion_tokens, 16);
    assert.deepEqual(validateCompletion(res), []);
    assert.equal(upstream.requests.at(-1)!.path, '/v1/completions');
    assert.equal((upstream.requests.at(-1)!.json as Json).prompt, 'Invent a holiday');

    const lines = loadChunks('openai/openai-completion-text.chunks.txt');
    const expected = lines.map((l) => (JSON.parse(l) as Json).choices?.[0]?.text ?? '').join('');
    upstream.enqueue({ sse: lines, splitAt: 23 });
    const stream = await client.completions.create({ model: 'test/model', prompt: 'Invent a holiday', max_tokens: 16, stream: true });
    let text = '';
    let last: Json | undefined;
    for await (const c of stream) {
      text += c.choices[0]?.text ?? '';
      last = c as unknown as Json;
    }
    assert.equal(text, expected);
    assert.equal(last!.object, 'text_completion');
    assert.deepEqual(last!.choices, []);
    assert.equal(typeof last!.usage.completion_tokens, 'number');
  });

  test('text completions on a chat-only endpoint: prompt becomes one user message', async () => {
    upstream.enqueue({ sse: [chunk({ role: 'assistant', content: '' }), chunk({ content: ' Paris' }), chunk({ content: '.' }), chunk({}, 'stop'), usageChunk(7, 2)] });
    const stream = await client.completions.create({ model: 'test/chat-only', prompt: 'The capital of France is', max_tokens: 5, stream: true });
    let text = '';
    const finishes: (string | null)[] = [];
    for await (const c of stream) {
      text += c.choices[0]?.text ?? '';
      if (c.choices[0]) finishes.push(c.choices[0].finish_reason);
    }
    assert.equal(text, ' Paris.');
    assert.equal(finishes.at(-1), 'stop');
    const sent = upstream.requests.at(-1)!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.deepEqual((sent.json as Json).messages, [{ role: 'user', content: 'The capital of France is' }]);
    assert.equal((sent.json as Json).max_completion_tokens, 5);

    upstream.enqueue({ json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: ' Paris.' }, finish_reason: 'stop' }], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } } });
    const plain = await client.completions.create({ model: 'test/chat-only', prompt: 'The capital of France is' });
    assert.equal(plain.choices[0]!.text, ' Paris.');
    assert.deepEqual(validateCompletion(plain), []);
  });

  test('models: list and retrieve', async () => {
    const list = await client.models.list();
    assert.deepEqual(list.data.map((m) => m.id), ['test/model', 'test/chat-only']);
    const raw = (await (await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${gw.adminKey}` } })).json()) as Json;
    assert.deepEqual(validateModelList(raw), []);
    const m = (await client.models.retrieve('test/model')) as unknown as Json;
    assert.equal(m.context_length, 8192);
    assert.equal(m.name, 'Test model');
    assert.deepEqual(m.pricing, { prompt: '0.000001', completion: '0.000002', request: '0' });
    assert.ok(m.supported_parameters.includes('tools'));
    assert.deepEqual(m.architecture.input_modalities, ['text']);
    await assert.rejects(client.models.retrieve('no/such'), (e: unknown) => e instanceof OpenAI.NotFoundError);
  });

  test('errors surface as the SDK typed errors with the catalog code', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'no-such/model', messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => e instanceof OpenAI.NotFoundError && e.code === 'no_endpoint_available' && e.status === 404,
    );
    await assert.rejects(
      client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: 'x' }], temperature: 3 }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === 'temperature' && e.code === 'invalid_request',
    );
    const bad = new OpenAI({ baseURL: gw.baseURL, apiKey: 'nope', maxRetries: 0 });
    await assert.rejects(bad.models.list(), (e: unknown) => e instanceof OpenAI.AuthenticationError && e.code === 'invalid_api_key');
    upstream.enqueue({ status: 500, json: { error: { message: 'boom', type: 'server_error' } } });
    await assert.rejects(
      client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 502 && e.code === 'upstream_error' && e.message === '502 boom',
    );
    upstream.enqueue({ status: 400, json: { error: { message: "This model's maximum context length is 8192 tokens", type: 'invalid_request_error', code: 'context_length_exceeded' } } });
    const res = await fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'x' }] }) });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 400);
    assert.equal(body.error.code, 'context_length_exceeded');
    assert.equal(body.error.message, "This model's maximum context length is 8192 tokens");
    assert.deepEqual(validateErrorResponse(body), []);
  });

  test('reasoning that exhausts the output limit fails with its own code (plain and streamed)', async () => {
    upstream.enqueue({ json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: '', reasoning_content: 'Let me think very long' }, finish_reason: 'length' }], usage: { prompt_tokens: 5, completion_tokens: 16, total_tokens: 21, completion_tokens_details: { reasoning_tokens: 16 } } } });
    await assert.rejects(
      client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 16 }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 422 && e.code === 'reasoning_exhausted_output_limit',
    );
    upstream.enqueue({ sse: [chunk({ role: 'assistant', reasoning_content: 'Let me' }), chunk({ reasoning_content: ' think' }), chunk({}, 'length'), usageChunk(5, 16, { completion_tokens_details: { reasoning_tokens: 16 } })] });
    const stream = await client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 16, stream: true });
    const reasoning: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const c of stream) reasoning.push((c.choices[0]?.delta as Json | undefined)?.reasoning ?? '');
      })(),
      (e: unknown) => e instanceof OpenAI.APIError && /reasoning/.test(e.message),
    );
    assert.equal(reasoning.join(''), 'Let me think');
  });

  test('an empty answer at the limit without any reasoning is a plain length finish', async () => {
    upstream.enqueue({ json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'length' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } } });
    const res = await client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: 'x' }], max_tokens: 1 });
    assert.equal(res.choices[0]!.finish_reason, 'length');
    assert.equal(res.choices[0]!.message.content, '');
  });

  test('a reasoning model answer keeps reasoning and counts reasoning tokens', async () => {
    upstream.enqueue({ sse: [chunk({ role: 'assistant', reasoning: '2+2 is 4' }), chunk({ content: '4' }), chunk({}, 'stop'), usageChunk(10, 6, { completion_tokens_details: { reasoning_tokens: 5 }, prompt_tokens_details: { cached_tokens: 4 } })] });
    const stream = client.chat.completions.stream({ model: 'test/model', messages: [{ role: 'user', content: '2+2?' }] });
    const chunks: Json[] = [];
    stream.on('chunk', (c) => chunks.push(c as unknown as Json));
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0]!.message.content, '4');
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.reasoning ?? '').join(''), '2+2 is 4');
    assert.deepEqual(chunks.at(-1)!.usage, { prompt_tokens: 10, completion_tokens: 6, total_tokens: 16, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 5 }, cost: 0.000022 });
  });
});

describe('a gateway with no config', () => {
  test('lists an empty catalog and says how to add a provider', async () => {
    const gw = await startGateway({});
    try {
      const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
      assert.deepEqual((await client.models.list()).data, []);
      const res = await fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'a/b', messages: [{ role: 'user', content: 'x' }] }) });
      const body = (await res.json()) as Json;
      assert.equal(res.status, 503);
      assert.equal(body.error.code, 'no_providers_configured');
      assert.equal(res.headers.get('x-should-retry'), 'false'); // terminal: the SDK must not retry the 503
      assert.match(res.headers.get('x-op-generation-id') ?? '', /^gen_/);
      const put = await fetch(`${gw.baseURL}/chat/completions`, { method: 'PUT', headers: { authorization: `Bearer ${gw.adminKey}` } });
      assert.equal(put.status, 405);
      assert.equal(((await put.json()) as Json).error.code, 'method_not_allowed');
      const badUrl = await fetch(`${gw.baseURL}/models/%E0%A4%A`, { headers: { authorization: `Bearer ${gw.adminKey}` } });
      const badBody = (await badUrl.json()) as Json;
      assert.equal(badUrl.status, 400);
      assert.equal(badBody.error.code, 'invalid_request');
      assert.equal(badBody.error.request_id, badUrl.headers.get('x-request-id'));
      assert.match(body.error.message, /add a provider and a model to the config file/);
    } finally {
      await gw.close();
    }
  });
});
