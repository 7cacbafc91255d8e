/**
 * The Vercel AI SDK's default OpenAI model (`openai('…')` speaks the Responses API) with
 * `baseURL` at the gateway: generateText and streamText with a tool over two steps, against a
 * scripted `openai`-kind upstream on port 0. The SDK's default `store` makes its second step
 * refer to the first step's items by id (`item_reference`), which the gateway resolves from
 * the stored response.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const chunk = (delta: Json, finish: string | null = null) => JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [{ index: 0, delta, finish_reason: finish }] });
const usage = (p: number, c: number) => JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c } });
const callStream = (id: string, args: string) => [chunk({ role: 'assistant', tool_calls: [{ index: 0, id, type: 'function', function: { name: 'weather', arguments: args } }] }), chunk({}, 'tool_calls'), usage(15, 5)];
const textStream = (text: string) => [chunk({ role: 'assistant', content: text }), chunk({}, 'stop'), usage(25, 3)];
const callJson = (id: string, args: string, text: string | null = null) => ({
  json: { id: 'c2', object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: text, tool_calls: [{ id, type: 'function', function: { name: 'weather', arguments: args } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 15, completion_tokens: 5, total_tokens: 20 } },
});
const textJson = (text: string) => ({ json: { id: 'c3', object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 25, completion_tokens: 3, total_tokens: 28 } } });

const weather = tool({
  description: 'Weather of a city',
  inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }),
  execute: async ({ city }) => ({ city, sky: city === 'Lima' ? 'grey' : 'blue' }),
});

describe('Vercel AI SDK (@ai-sdk/openai default model = Responses API)', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let provider: ReturnType<typeof createOpenAI>;
  /** The Responses request bodies the SDK sent to the gateway. */
  const sent: Json[] = [];

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway({
      retention: 1,
      providers: [{ id: 'up', kind: 'openai', base_url: upstream.url, api_key: 'sk-up' }],
      models: [{ id: 'test/model', context_length: 8192, endpoints: [{ provider: 'up', upstream_model: 'up-model', supported_parameters: ['tools', 'tool_choice', 'temperature', 'max_tokens', 'max_completion_tokens'] }] }],
    });
    const key = await gw.createKey('ai-sdk');
    provider = createOpenAI({
      baseURL: gw.baseURL,
      apiKey: key.secret,
      fetch: async (url, init) => {
        if (typeof init?.body === 'string') sent.push(JSON.parse(init.body) as Json);
        return fetch(url, init);
      },
    });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  test('generateText: a tool call, its result, then the answer', async () => {
    upstream.enqueue(callJson('call_g1', '{"city":"Lima"}', 'Let me look.'), textJson('Lima is grey today.'));
    const result = await generateText({ model: provider('test/model'), prompt: 'Weather in Lima?', tools: { weather }, stopWhen: stepCountIs(3) });
    assert.equal(result.text, 'Lima is grey today.');
    assert.equal(result.steps.length, 2);
    assert.deepEqual(result.steps[0]!.toolResults.map((r) => r.output), [{ city: 'Lima', sky: 'grey' }]);
    assert.equal(result.totalUsage.inputTokens, 40);
    const [first, second] = upstream.requests.slice(-2).map((r) => r.json as Json);
    assert.equal(upstream.requests.at(-1)!.path, '/v1/chat/completions');
    assert.deepEqual(first!.messages, [{ role: 'user', content: [{ type: 'text', text: 'Weather in Lima?' }] }]);
    // Step two referred to the first step's message by id; it came back from the stored response.
    const refs = (sent.at(-1)!.input as Json[]).filter((i) => i.type === 'item_reference');
    assert.equal(refs.length, 1);
    assert.match(refs[0]!.id, /^msg_/);
    assert.deepEqual(second!.messages.slice(1), [
      { role: 'assistant', content: 'Let me look.', tool_calls: [{ id: 'call_g1', type: 'function', function: { name: 'weather', arguments: '{"city":"Lima"}' } }] },
      { role: 'tool', tool_call_id: 'call_g1', content: JSON.stringify({ city: 'Lima', sky: 'grey' }) },
    ]);
  });

  test('streamText: a tool call, its result, then the streamed answer', async () => {
    upstream.enqueue({ sse: callStream('call_s1', '{"city":"Oslo"}') }, { sse: textStream('Oslo is blue.') });
    const result = streamText({ model: provider('test/model'), prompt: 'Weather in Oslo?', tools: { weather }, stopWhen: stepCountIs(3) });
    const kinds = new Set<string>();
    let text = '';
    for await (const part of result.fullStream) {
      kinds.add(part.type);
      if (part.type === 'text-delta') text += part.text;
      if (part.type === 'error') assert.fail(`stream error: ${JSON.stringify(part.error)}`);
    }
    assert.equal(text, 'Oslo is blue.');
    assert.ok(kinds.has('tool-call') && kinds.has('tool-result'), [...kinds].join(','));
    assert.equal((await result.steps).length, 2);
    const second = upstream.requests.at(-1)!.json as Json;
    assert.equal(second.messages.at(-1).tool_call_id, 'call_s1');
    assert.equal(second.messages.at(-2).tool_calls[0].function.arguments, '{"city":"Oslo"}');
  });

  test('with store off (providerOptions.openai.store = false) the SDK sends whole items', async () => {
    upstream.enqueue(callJson('call_n1', '{"city":"Rome"}'), textJson('Rome is blue.'));
    const result = await generateText({ model: provider('test/model'), prompt: 'Weather in Rome?', tools: { weather }, stopWhen: stepCountIs(3), providerOptions: { openai: { store: false } } });
    assert.equal(result.text, 'Rome is blue.');
    const second = upstream.requests.at(-1)!.json as Json;
    assert.equal(second.messages.at(-2).tool_calls[0].id, 'call_n1');
    assert.equal(sent.at(-1)!.store, false);
    assert.deepEqual((sent.at(-1)!.input as Json[]).map((i) => i.type ?? i.role), ['user', 'function_call', 'function_call_output']);
  });
});
