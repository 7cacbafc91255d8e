/**
 * The `openai` kind's dialects (issue 4 item 4) with constructed upstream streams and bodies;
 * string content for llama.cpp and Ollama (issue 18 item 7).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

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

  test('a reasoning budget without an effort reaches an effort-only dialect as an effort, not lost', async () => {
    const u = up('vllm');
    const sent: unknown[] = [];
    for (const reasoning of [{ max_tokens: 1024 }, { max_tokens: 8192 }, { max_tokens: 32000 }, { enabled: true }, { exclude: true }]) {
      u.enqueue({ json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } } });
      await client.chat.completions.create({ model: 'test/vllm', messages: [{ role: 'user', content: 'think' }], max_tokens: 100, reasoning } as never);
      sent.push((u.requests.at(-1)!.json as Json).reasoning_effort);
    }
    assert.deepEqual(sent, ['low', 'medium', 'high', 'medium', undefined]);
  });

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

/**
 * Older llama.cpp and Ollama builds take only string `content` (issue 18 item 7): an upstream
 * that refuses every content array as they do, reached from chat, Messages and Responses.
 */
describe('llama.cpp and Ollama: text-only content goes as a string', () => {
  const NAMES = ['llamacpp', 'ollama'] as const;
  const ups = new Map<string, Upstream>();
  let gw: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;
  /** When false the upstream is a newer build that takes arrays (for media). */
  let refuseArrays = true;
  const PNG = 'data:image/png;base64,iVBORw0KGgo=';
  const ANSWER = { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } };
  /** What each server says to an array (llama.cpp: nlohmann json's exception as a 500; Ollama: a 400). */
  const REFUSAL: Record<string, { status: number; json: Json }> = {
    llamacpp: { status: 500, json: { error: { code: 500, message: '[json.exception.type_error.302] type must be string, but is array', type: 'server_error' } } },
    ollama: { status: 400, json: { error: { message: 'type must be string, but is array', type: 'invalid_request_error', param: null, code: null } } },
  };
  before(async () => {
    for (const d of NAMES) {
      const u = await startUpstream();
      u.setResponder((req) => {
        const body = req.json as Json;
        if (refuseArrays && body.messages.some((m: Json) => Array.isArray(m.content))) return REFUSAL[d];
        return body.stream ? { sse: [c({ role: 'assistant', content: 'ok' }), c({}, 'stop'), JSON.stringify({ choices: [], usage: ANSWER.usage })] } : { json: ANSWER };
      });
      ups.set(d, u);
    }
    const ep = (d: string, extra: Json = {}) => ({ provider: d, upstream_model: `${d}-model`, supported_parameters: ALL_PARAMS, ...extra });
    gw = await startGateway({
      providers: NAMES.map((d) => ({ id: d, kind: 'openai', dialect: d, base_url: ups.get(d)!.url })),
      models: [
        ...NAMES.map((d) => ({ id: `test/${d}`, context_length: 8192, architecture: { input_modalities: ['text', 'image'] }, endpoints: [ep(d)] })),
        { id: 'test/llamacpp-arrays', context_length: 8192, endpoints: [ep('llamacpp', { string_content: false })] },
      ],
    });
    openai = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: gw.origin, apiKey: gw.adminKey, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    for (const u of ups.values()) await u.close();
  });
  const sent = (d: string) => (ups.get(d)!.requests.at(-1)!.json as Json).messages.map((m: Json) => m.content);

  test('chat: every text-only array (system, user, assistant, tool) is one string, parts in order', async () => {
    const messages = [
      { role: 'system', content: [{ type: 'text', text: 'Be terse.' }, { type: 'text', text: 'Answer in French.' }] },
      { role: 'user', content: [{ type: 'text', text: '<task>weather</task>' }, { type: 'text', text: '<env>Paris</env>' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Calling.' }], tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'sunny' }] },
    ];
    for (const d of NAMES) {
      for (const stream of [false, true]) {
        const res = await fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: `test/${d}`, messages, stream }) });
        assert.equal(res.status, 200, `${d} stream=${stream}: ${await res.clone().text()}`);
        assert.match(await res.text(), /ok/);
        assert.deepEqual(sent(d), ['Be terse.\n\nAnswer in French.', '<task>weather</task>\n\n<env>Paris</env>', 'Calling.', 'sunny'], d);
      }
    }
  });

  test('a message with an image keeps its parts (newer builds take them); text-only ones beside it are strings', async () => {
    refuseArrays = false;
    try {
      for (const d of NAMES) {
        const res = await openai.chat.completions.create({ model: `test/${d}`, messages: [{ role: 'system', content: [{ type: 'text', text: 'Be terse.' }] }, { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: PNG } }] }] });
        assert.equal(res.choices[0]!.message.content, 'ok');
        assert.deepEqual(sent(d), ['Be terse.', [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: PNG } }]], d);
      }
    } finally {
      refuseArrays = true;
    }
  });

  test('string_content: false on the endpoint keeps arrays (and such a server refuses them)', async () => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/llamacpp-arrays', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] }) });
    assert.equal(res.status, 502);
    assert.deepEqual(sent('llamacpp'), [[{ type: 'text', text: 'hi' }]]);
  });

  test('Messages (Anthropic SDK), translated: system blocks with cache_control, text blocks and tool results as strings', async () => {
    for (const d of NAMES) {
      const msg = await anthropic.messages.create({
        model: `test/${d}`,
        max_tokens: 100,
        system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'Be terse.' }],
        tools: [{ name: 'w', input_schema: { type: 'object', properties: {} } }],
        messages: [
          { role: 'user', content: [{ type: 'text', text: '<system-reminder>ctx</system-reminder>' }, { type: 'text', text: 'weather?', cache_control: { type: 'ephemeral' } }] },
          { role: 'assistant', content: [{ type: 'text', text: 'Calling.' }, { type: 'tool_use', id: 'toolu_1', name: 'w', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'sunny' }, { type: 'text', text: '20C' }] }] },
        ],
      });
      assert.deepEqual(msg.content, [{ type: 'text', text: 'ok' }], d);
      assert.deepEqual(sent(d), ['You are Claude Code.\n\nBe terse.', '<system-reminder>ctx</system-reminder>\n\nweather?', 'Calling.', 'sunny\n20C'], d);
      // Streamed too.
      const stream = anthropic.messages.stream({ model: `test/${d}`, max_tokens: 100, messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }] });
      assert.deepEqual((await stream.finalMessage()).content, [{ type: 'text', text: 'ok' }], d);
      assert.deepEqual(sent(d), ['a\n\nb'], d);
    }
  });

  test('Responses (OpenAI SDK), translated: instructions and input_text parts as strings', async () => {
    for (const d of NAMES) {
      const res = await openai.responses.create({
        model: `test/${d}`,
        instructions: 'Be terse.',
        input: [
          { role: 'developer', content: [{ type: 'input_text', text: 'Use metric units.' }] },
          { role: 'user', content: [{ type: 'input_text', text: '<env>Paris</env>' }, { type: 'input_text', text: 'weather?' }] },
        ],
      });
      assert.equal(res.output_text, 'ok', d);
      const contents = sent(d) as unknown[];
      assert.equal(contents.every((x) => typeof x === 'string'), true, `${d}: ${JSON.stringify(contents)}`);
      assert.equal(contents.at(-1), '<env>Paris</env>\n\nweather?', d);
    }
  });
});
