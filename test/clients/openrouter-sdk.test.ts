/**
 * OpenRouter's own clients against the gateway (issue 14): `@openrouter/sdk` (which validates
 * every response with its zod schemas) for chat, streaming, tools, models, endpoints,
 * providers, generation and key; `@openrouter/ai-sdk-provider` with `ai` for text, streams and
 * tools. Upstreams are scripted on port 0.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenRouter } from '@openrouter/sdk';
import type { ChatResult, ChatStreamChunk } from '@openrouter/sdk/models';
import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { generateText, jsonSchema, streamText, tool } from 'ai';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const answer = (content: string, extra: Json = {}) => ({
  json: { id: 'up-1', object: 'chat.completion', created: 1, model: 'upstream-model', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop', ...extra }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } },
});
const chunk = (delta: Json, finish: string | null = null, extra: Json = {}) =>
  JSON.stringify({ id: 'up-1', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [{ index: 0, delta, finish_reason: finish, ...extra }] });
const usageChunk = JSON.stringify({ id: 'up-1', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } });
const toolAnswer = {
  json: {
    id: 'up-2', object: 'chat.completion', created: 1, model: 'upstream-model',
    choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] }, finish_reason: 'tool_calls' }],
    usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 },
  },
};

type ChatRequestOf = Parameters<OpenRouter['chat']['send']>[0]['chatRequest'];
/** `chat.send` without a stream: its declared return type is a union of both modes. */
const complete = async (c: OpenRouter, chatRequest: ChatRequestOf) => (await c.chat.send({ chatRequest })) as unknown as ChatResult;
const streamed = async (c: OpenRouter, chatRequest: ChatRequestOf) => (await c.chat.send({ chatRequest: { ...chatRequest, stream: true } })) as unknown as AsyncIterable<ChatStreamChunk>;

describe('@openrouter/sdk through the gateway', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let client: OpenRouter;
  let keyClient: OpenRouter;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(oneModelConfig(upstream.url, { endpoint: { supported_parameters: ['temperature', 'max_tokens', 'tools', 'tool_choice', 'logprobs', 'top_logprobs'] } }));
    client = new OpenRouter({ apiKey: gw.adminKey, serverURL: gw.baseURL });
    const key = await gw.createKey('sdk');
    keyClient = new OpenRouter({ apiKey: key.secret, serverURL: gw.baseURL });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  test('chat.send: a complete answer, validated by the SDK, with X-Generation-Id and relayed logprobs', async () => {
    const logprobs = { content: [{ token: 'Hi', logprob: -0.25, bytes: [72, 105], top_logprobs: [] }], refusal: null };
    upstream.enqueue(answer('Hi', { logprobs }), answer('Hi'));
    const res = await complete(client, { model: 'test/model', messages: [{ role: 'user', content: 'hello' }], logprobs: true });
    assert.equal(res.choices[0]!.message.content, 'Hi');
    assert.equal(res.choices[0]!.logprobs?.content?.[0]?.token, 'Hi');
    assert.equal(res.usage?.promptTokens, 5);
    assert.match(res.id, /^gen_/);
    const raw = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'hello' }] }),
    }).then(async (r) => ({ headers: r.headers, status: r.status, body: (await r.json()) as Json }));
    assert.equal(raw.status, 200);
    assert.equal(raw.body.system_fingerprint, '', 'OpenRouter requires the member, OpenAI types it as a string');
    assert.equal(raw.headers.get('x-generation-id'), raw.headers.get('x-op-generation-id'));
    assert.match(raw.headers.get('x-generation-id') ?? '', /^gen_/);
  });

  test('chat.send with stream: true: chunks in order, usage last, logprobs on the text chunk', async () => {
    const logprobs = { content: [{ token: 'Hel', logprob: -0.5, bytes: null, top_logprobs: [] }] };
    upstream.enqueue({ sse: [chunk({ role: 'assistant', content: '' }), chunk({ content: 'Hel' }, null, { logprobs }), chunk({ content: 'lo' }), chunk({}, 'stop'), usageChunk] });
    const stream = await streamed(client, { model: 'test/model', messages: [{ role: 'user', content: 'hello' }] });
    let text = '';
    let usage: Json | undefined;
    const tokens: string[] = [];
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      for (const lp of c.choices[0]?.logprobs?.content ?? []) tokens.push(lp.token);
      if (c.usage) usage = c.usage as Json;
    }
    assert.equal(text, 'Hello');
    assert.deepEqual(tokens, ['Hel']);
    assert.equal(usage?.totalTokens, 7);
  });

  test('chat.send with tools: the tool call comes back typed', async () => {
    upstream.enqueue(toolAnswer);
    const res = await complete(client, {
      model: 'test/model',
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      toolChoice: 'auto',
    });
    assert.equal(res.choices[0]!.finishReason, 'tool_calls');
    assert.equal(res.choices[0]!.message.toolCalls?.[0]?.function.name, 'get_weather');
    assert.equal(res.choices[0]!.message.toolCalls?.[0]?.function.arguments, '{"city":"Paris"}');
  });

  test('models.list, endpoints.list and providers.list validate', async () => {
    const page = await client.models.list();
    const models = page.result;
    assert.equal(models.totalCount, 1);
    const m = models.data[0]!;
    assert.equal(m.id, 'test/model');
    assert.equal(m.canonicalSlug, 'test/model');
    assert.equal(m.pricing.prompt, '0.000001');
    assert.equal(m.pricing.completion, '0.000002');
    assert.deepEqual(m.architecture.inputModalities, ['text']);
    assert.equal(m.topProvider.isModerated, false);
    assert.equal(m.perRequestLimits, null);
    assert.ok(m.supportedParameters.includes('tools'));
    assert.equal(m.links.details, '/v1/models/test/model/endpoints', 'a path the gateway serves');
    const details = await fetch(new URL(m.links.details, gw.baseURL), { headers: { authorization: `Bearer ${gw.adminKey}` } });
    assert.equal(details.status, 200);
    assert.equal(((await details.json()) as Json).data.id, 'test/model');

    const endpoints = await client.endpoints.list({ author: 'test', slug: 'model' });
    const e = endpoints.data.endpoints[0]!;
    assert.equal(e.providerName, 'up');
    assert.equal(e.modelName, 'Test model');
    assert.equal(e.uptimeLast30m, 1, 'the earlier answers count');
    assert.equal(e.uptimeLast1d, 1);
    assert.equal(e.supportsToolChoice.function, true);
    assert.ok(e.latencyLast30m === null || e.latencyLast30m.p50 >= 0);

    const providers = await client.providers.list();
    assert.deepEqual(providers.data.map((p) => p.slug), ['up']);
    assert.equal(providers.data[0]!.privacyPolicyUrl, null);
  });

  test('generations.getGeneration and apiKeys.getCurrentKeyMetadata validate', async () => {
    upstream.enqueue(answer('Hi'));
    const res = await complete(keyClient, { model: 'test/model', messages: [{ role: 'user', content: 'hello' }] });
    await gw.flush();
    const gen = await keyClient.generations.getGeneration({ id: res.id });
    assert.equal(gen.data.id, res.id);
    assert.equal(gen.data.model, 'test/model');
    assert.equal(gen.data.tokensPrompt, 5);
    assert.equal(gen.data.totalCost, 0.000009); // 5 × $1/M + 2 × $2/M
    assert.equal(gen.data.providerName, 'up');
    assert.equal(gen.data.providerResponses?.[0]?.status, 200);
    assert.equal(gen.data.isByok, false);

    const key = await keyClient.apiKeys.getCurrentKeyMetadata();
    assert.equal(key.data.usage, 0.000009);
    assert.equal(key.data.limit, null);
    assert.equal(key.data.isManagementKey, false);
    assert.equal(key.data.rateLimit.requests, -1);
    const admin = await client.apiKeys.getCurrentKeyMetadata();
    assert.equal(admin.data.isManagementKey, true);
  });
});

describe('@openrouter/ai-sdk-provider (ai) through the gateway', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let openrouter: ReturnType<typeof createOpenRouter>;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(oneModelConfig(upstream.url));
    openrouter = createOpenRouter({ apiKey: gw.adminKey, baseURL: gw.baseURL });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  test('generateText', async () => {
    upstream.enqueue(answer('Bonjour'));
    const { text, usage } = await generateText({ model: openrouter.chat('test/model'), prompt: 'Say hello in French' });
    assert.equal(text, 'Bonjour');
    assert.equal(usage.inputTokens, 5);
    const sent = upstream.requests.at(-1)!.json as Json;
    assert.equal(sent.model, 'upstream-model');
  });

  test('streamText', async () => {
    upstream.enqueue({ sse: [chunk({ role: 'assistant', content: '' }), chunk({ content: 'Bon' }), chunk({ content: 'jour' }), chunk({}, 'stop'), usageChunk] });
    const result = streamText({ model: openrouter.chat('test/model'), prompt: 'Say hello in French' });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    assert.equal(text, 'Bonjour');
    assert.equal((await result.usage).outputTokens, 2);
  });

  test('tools: the model calls one, ai runs it, the second turn answers', async () => {
    upstream.enqueue(toolAnswer, answer('It is sunny in Paris.'));
    const calls: string[] = [];
    const { text, steps } = await generateText({
      model: openrouter.chat('test/model'),
      prompt: 'weather in Paris?',
      tools: {
        get_weather: tool({
          description: 'weather of a city',
          inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
          execute: async ({ city }) => {
            calls.push(city);
            return { city, sky: 'sunny' };
          },
        }),
      },
      stopWhen: ({ steps: s }) => s.length >= 2,
    });
    assert.deepEqual(calls, ['Paris']);
    assert.equal(steps.length, 2);
    assert.equal(text, 'It is sunny in Paris.');
    const second = upstream.requests.at(-1)!.json as Json;
    assert.equal(second.messages.at(-1).role, 'tool');
    assert.equal(second.messages.at(-1).tool_call_id, 'call_1');
  });
});
