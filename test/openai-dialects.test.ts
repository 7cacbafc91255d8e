/** The `openai` kind's dialects (issue 4 item 4) with constructed upstream streams and bodies. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startUpstream, type Upstream } from './helpers/replay-upstream.js';
import { startGateway, type TestGateway } from './helpers/gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const DIALECTS = ['vllm', 'llamacpp', 'ollama', 'deepseek', 'groq', 'openrouter'] as const;
const ALL_PARAMS = ['temperature', 'max_tokens', 'max_completion_tokens', 'tools', 'tool_choice', 'parallel_tool_calls', 'reasoning', 'reasoning_effort', 'stop'];

const c = (delta: Json, finish: string | null = null, extra: Json = {}) => JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }], ...extra });

describe('openai dialects', () => {
  const ups = new Map<string, Upstream>();
  let gw: TestGateway;
  let client: OpenAI;
  before(async () => {
    for (const d of DIALECTS) ups.set(d, await startUpstream());
    gw = await startGateway({
      providers: DIALECTS.map((d) => ({ id: d, kind: 'openai', dialect: d, base_url: ups.get(d)!.url })),
      models: DIALECTS.map((d) => ({ id: `test/${d}`, context_length: 8192, endpoints: [{ provider: d, upstream_model: `${d}-model`, supported_parameters: ALL_PARAMS }] })),
    });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    for (const u of ups.values()) await u.close();
  });
  const up = (d: string) => ups.get(d)!;
  const history = [
    { role: 'user', content: 'weather?' },
    { role: 'assistant', content: '', reasoning: 'I should call the tool', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
  ];
  const tools = [{ type: 'function', function: { name: 'w', parameters: { type: 'object', properties: {} } } }, { type: 'function', function: { name: 'x' } }];

  test('vLLM: max_tokens, stream_options only with stream, reasoning echoed as `reasoning`, integer error codes', async () => {
    const u = up('vllm');
    u.enqueue({ json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok', reasoning: 'thought' }, finish_reason: 'stop', stop_reason: null }], usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } } });
    const res = await client.chat.completions.create({ model: 'test/vllm', messages: history as never, max_tokens: 50, reasoning_effort: 'low' });
    assert.equal((res.choices[0]!.message as unknown as Json).reasoning, 'thought');
    const sent = u.requests.at(-1)!.json as Json;
    assert.equal(sent.max_tokens, 50);
    assert.equal('max_completion_tokens' in sent, false);
    assert.equal('stream_options' in sent, false);
    assert.equal(sent.reasoning_effort, 'low');
    assert.deepEqual(sent.messages[1], { role: 'assistant', content: null, reasoning: 'I should call the tool', tool_calls: history[1]!.tool_calls });
    u.enqueue({ sse: [c({ role: 'assistant', reasoning: 'hm' }), c({ content: 'yes' }), c({}, 'stop'), JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: null, usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })] });
    const chunks: Json[] = [];
    for await (const ch of await client.chat.completions.create({ model: 'test/vllm', messages: [{ role: 'user', content: 'x' }], stream: true })) chunks.push(ch as unknown as Json);
    assert.deepEqual((u.requests.at(-1)!.json as Json).stream_options, { include_usage: true });
    assert.equal(chunks.map((x) => x.choices[0]?.delta?.reasoning ?? '').join(''), 'hm');
    assert.deepEqual(chunks.at(-1)!.usage, { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5, cost: 0 });
    u.enqueue({ status: 400, json: { object: 'error', message: 'max_tokens must be at least 1', type: 'BadRequestError', param: null, code: 400 } });
    await assert.rejects(client.chat.completions.create({ model: 'test/vllm', messages: [{ role: 'user', content: 'x' }] }), (e: unknown) => e instanceof OpenAI.BadRequestError && e.code === 'upstream_bad_request' && e.message === '400 max_tokens must be at least 1');
  });

  test('llama.cpp: null first content, [DONE] without its blank line, named tool_choice forced, 503 while loading', async () => {
    const u = up('llamacpp');
    u.enqueue({ rawChunks: [`data: ${c({ role: 'assistant', content: null })}\n\n`, `data: ${c({ content: 'Hi' })}\n\n`, `data: ${c({}, 'stop', { timings: { predicted_n: 1, predicted_per_second: 42 } })}\n\n`, `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 } })}\n\n`, 'data: [DONE]'] });
    const stream = client.chat.completions.stream({ model: 'test/llamacpp', messages: [{ role: 'user', content: 'x' }], tools: tools as never, tool_choice: { type: 'function', function: { name: 'w' } } });
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0]!.message.content, 'Hi');
    const sent = u.requests.at(-1)!.json as Json;
    assert.equal(sent.tool_choice, 'required');
    assert.deepEqual(sent.tools.map((t: Json) => t.function.name), ['w']);
    u.enqueue({ status: 503, json: { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } } });
    await assert.rejects(client.chat.completions.create({ model: 'test/llamacpp', messages: [{ role: 'user', content: 'x' }] }), (e: unknown) => e instanceof OpenAI.APIError && e.status === 503 && e.code === 'upstream_overloaded');
  });

  test('Ollama: whole tool calls in one chunk each, at one index → two dense calls; parallel_tool_calls dropped', async () => {
    const u = up('ollama');
    u.enqueue({ sse: [
      c({ role: 'assistant', content: '', tool_calls: [{ id: 'call_a', index: 0, type: 'function', function: { name: 'w', arguments: '{"city":"Paris"}' } }] }),
      c({ role: 'assistant', content: '', tool_calls: [{ id: 'call_b', index: 0, type: 'function', function: { name: 'x', arguments: '{}' } }] }),
      c({ role: 'assistant', content: '' }, 'tool_calls', { system_fingerprint: 'fp_ollama' }),
      JSON.stringify({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 8, total_tokens: 17 } }),
    ] });
    const final = await client.chat.completions.stream({ model: 'test/ollama', messages: [{ role: 'user', content: 'x' }], tools: tools as never, parallel_tool_calls: true }).finalChatCompletion();
    assert.deepEqual(final.choices[0]!.message.tool_calls!.map((t) => (t.type === 'function' ? [t.id, t.function.name, t.function.arguments] : [])), [['call_a', 'w', '{"city":"Paris"}'], ['call_b', 'x', '{}']]);
    const sent = u.requests.at(-1)!.json as Json;
    assert.equal('parallel_tool_calls' in sent, false);
    assert.equal(sent.max_tokens, undefined);
  });

  test('DeepSeek: reasoning_content read, echoed only on tool-call turns, cache hits counted', async () => {
    const u = up('deepseek');
    u.enqueue({ sse: [c({ role: 'assistant', reasoning_content: 'Let me' }), c({ reasoning_content: ' think' }), c({ content: '42' }), c({}, 'stop', { usage: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25, prompt_cache_hit_tokens: 16, prompt_cache_miss_tokens: 4, completion_tokens_details: { reasoning_tokens: 3 } } })] });
    const chunks: Json[] = [];
    for await (const ch of await client.chat.completions.create({ model: 'test/deepseek', messages: [...history, { role: 'assistant', content: 'earlier', reasoning: 'not echoed' }, { role: 'user', content: 'again' }] as never, stream: true })) chunks.push(ch as unknown as Json);
    assert.equal(chunks.map((x) => x.choices[0]?.delta?.reasoning ?? '').join(''), 'Let me think');
    assert.deepEqual(chunks.at(-1)!.usage, { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25, prompt_tokens_details: { cached_tokens: 16 }, completion_tokens_details: { reasoning_tokens: 3 }, cost: 0 });
    const sent = u.requests.at(-1)!.json as Json;
    assert.equal(sent.messages[1].reasoning_content, 'I should call the tool');
    assert.deepEqual(sent.messages[3], { role: 'assistant', content: 'earlier' });
  });

  test('Groq: stream usage under x_groq', async () => {
    const u = up('groq');
    u.enqueue({ sse: [c({ role: 'assistant', content: 'fast' }), c({}, 'stop', { x_groq: { id: 'req_1', usage: { prompt_tokens: 7, completion_tokens: 1, total_tokens: 8 } } })] });
    const chunks: Json[] = [];
    for await (const ch of await client.chat.completions.create({ model: 'test/groq', messages: [{ role: 'user', content: 'x' }], stream: true, max_completion_tokens: 9 })) chunks.push(ch as unknown as Json);
    assert.deepEqual(chunks.at(-1)!.usage, { prompt_tokens: 7, completion_tokens: 1, total_tokens: 8, cost: 0 });
    assert.equal((u.requests.at(-1)!.json as Json).max_completion_tokens, 9);
  });

  test('OpenRouter upstream: keep-alive comments, reasoning object passed, reasoning_details echoed, in-band error chunk', async () => {
    const u = up('openrouter');
    u.enqueue({ rawChunks: [': OPENROUTER PROCESSING\n\n', `data: ${c({ role: 'assistant', content: 'Part' })}\n\n`, ': OPENROUTER PROCESSING\n\n', `data: ${JSON.stringify({ id: 'gen-1', object: 'chat.completion.chunk', created: 1, model: 'm', provider: 'X', error: { code: 502, message: 'Provider disconnected', metadata: { error_type: 'provider_unavailable' } }, choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error', native_finish_reason: 'error' }] })}\n\n`] });
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/openrouter', stream: true, reasoning: { effort: 'high' }, messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b', reasoning_details: [{ type: 'reasoning.encrypted', data: 'xyz' }] }, { role: 'user', content: 'c' }] }),
    });
    const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: '));
    const parsed = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as Json);
    assert.equal(parsed.map((p) => p.choices[0]?.delta?.content ?? '').join(''), 'Part');
    const err = parsed.at(-1)!;
    assert.equal(err.error.code, 'upstream_error');
    assert.equal(err.error.message, 'Provider disconnected');
    assert.equal(err.choices[0].finish_reason, 'error');
    assert.equal(events.at(-1), 'data: [DONE]');
    const sent = u.requests.at(-1)!.json as Json;
    assert.deepEqual(sent.reasoning, { effort: 'high' });
    assert.deepEqual(sent.messages[1].reasoning_details, [{ type: 'reasoning.encrypted', data: 'xyz' }]);
    assert.equal(sent.max_tokens, undefined);
  });
});

describe('reasoning in history under DeepSeek\'s name `reasoning_content`', () => {
  const NAMES = ['openai', 'vllm', 'llamacpp', 'deepseek'] as const;
  const ups = new Map<string, Upstream>();
  let gw: TestGateway;
  before(async () => {
    for (const d of NAMES) ups.set(d, await startUpstream());
    gw = await startGateway({
      providers: NAMES.map((d) => ({ id: d, kind: 'openai', dialect: d, base_url: ups.get(d)!.url })),
      models: NAMES.map((d) => ({ id: `test/${d}`, context_length: 8192, endpoints: [{ provider: d, upstream_model: `${d}-model`, supported_parameters: ALL_PARAMS }] })),
    });
  });
  after(async () => {
    await gw.close();
    for (const u of ups.values()) await u.close();
  });

  test('is accepted as `reasoning` and forwarded under each dialect\'s field, or dropped where the server takes none', async () => {
    const messages = [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, reasoning_content: 'I should call the tool', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ];
    const expected: Record<string, Json> = {
      openai: {},
      vllm: { reasoning: 'I should call the tool' },
      llamacpp: { reasoning_content: 'I should call the tool' },
      deepseek: { reasoning_content: 'I should call the tool' },
    };
    for (const d of NAMES) {
      const u = ups.get(d)!;
      u.enqueue({ json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 } } });
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: `test/${d}`, messages, tools: [{ type: 'function', function: { name: 'w' } }] }),
      });
      assert.equal(res.status, 200, d);
      const sent = (u.requests.at(-1)!.json as Json).messages[1] as Json;
      assert.deepEqual(sent, { role: 'assistant', content: null, tool_calls: messages[1]!.tool_calls, ...expected[d] }, d);
    }
    // `reasoning` wins when both are sent.
    const u = ups.get('vllm')!;
    u.enqueue({ json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] } });
    await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/vllm', messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b', reasoning: 'kept', reasoning_content: 'alias' }, { role: 'user', content: 'c' }] }),
    });
    assert.deepEqual((u.requests.at(-1)!.json as Json).messages[1], { role: 'assistant', content: 'b', reasoning: 'kept' });
  });
});
