/**
 * Provider kind `azure` with an API key, against the fake Azure OpenAI resource
 * (test/helpers/azure-fake.ts): openai's own `AzureOpenAI` client cross-checks the fake; through
 * the gateway the openai SDK's chat, stream and tools, Responses, legacy completions and
 * embeddings, and the Anthropic SDK's Messages (translated), reach both URL families with the `api-key` header, the deployment and the
 * api-version; Azure's content-filter annotations never reach the client and are kept in the
 * record; a blocked prompt is `content_filtered`; a 429 cools the endpoint for `retry-after-ms`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { AzureOpenAI } from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startFakeAzure, BLOCKED_PROMPT_BODY, PROMPT_FILTER_RESULTS, SAFE_RESULTS, VIOLENCE_FILTERED, type FakeAzure } from '../helpers/azure-fake.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { generationRecord } from '../helpers/generation-record.js';
import { sseJsonEvents } from '../helpers/sse.js';
import { parseConfig } from '../../src/config/load.js';
import { azureRetryAfterSeconds, parseAzureErrorResponse } from '../../src/providers/azure/azure-error.js';
import { azureUrl } from '../../src/providers/azure/convert-to-azure-request.js';
import type { ProviderTarget } from '../../src/providers/types.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const KEY = 'azure-key-0123456789abcdef';
const PARAMS = ['temperature', 'max_tokens', 'max_completion_tokens', 'tools', 'tool_choice', 'stop'];

let az: FakeAzure;
let gw: TestGateway;
let client: OpenAI;

before(async () => {
  az = await startFakeAzure({ apiKey: KEY, deployments: ['gpt4o-prod', 'gpt4o-dated', 'embed-small', 'instruct'] });
  gw = await startGateway({
    retention: 30,
    providers: [
      { id: 'az', kind: 'azure', base_url: az.url, api_key: KEY },
      { id: 'az-dated', kind: 'azure', base_url: `${az.url}/`, api_key: KEY, azure_api: 'deployment', azure_api_version: '2024-10-21' },
    ],
    models: [
      { id: 'az/gpt-4o', context_length: 128000, endpoints: [{ provider: 'az', upstream_model: 'gpt4o-prod', supported_parameters: PARAMS, pricing: { prompt: 2.5, completion: 10 } }] },
      { id: 'az/gpt-4o-dated', context_length: 128000, endpoints: [{ provider: 'az-dated', upstream_model: 'gpt-4o', azure_deployment: 'gpt4o-dated', supported_parameters: PARAMS }] },
      { id: 'az/embed', context_length: 8192, endpoints: [{ provider: 'az', upstream_model: 'embed-small', embeddings: true }] },
      { id: 'az/embed-dated', context_length: 8192, endpoints: [{ provider: 'az-dated', upstream_model: 'embed-small', embeddings: true }] },
      { id: 'az/instruct', context_length: 4096, endpoints: [{ provider: 'az-dated', upstream_model: 'instruct', supports_text_completions: true, supported_parameters: ['max_tokens'] }] },
      {
        id: 'az/fallback',
        context_length: 128000,
        endpoints: [
          { provider: 'az', upstream_model: 'throttled', supported_parameters: PARAMS },
          { provider: 'az-dated', upstream_model: 'gpt4o-dated', supported_parameters: PARAMS },
        ],
      },
      {
        id: 'az/two',
        context_length: 128000,
        endpoints: [
          { provider: 'az', upstream_model: 'gpt4o-prod', supported_parameters: PARAMS },
          { provider: 'az-dated', upstream_model: 'gpt4o-dated', supported_parameters: PARAMS },
        ],
      },
    ],
  });
  client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
});

after(async () => {
  await gw?.close();
  await az?.close();
});

/** The record of a generation (its `detail` parsed). */
const record = (id: string | null) => generationRecord(gw, id);

const lastRequest = () => az.requests[az.requests.length - 1]!;

describe('the fake checks what Azure checks, and openai\'s AzureOpenAI client passes it', () => {
  test('AzureOpenAI (deployment family, api-key): chat, Responses and embeddings, with the paths and api-versions it sends', async () => {
    const azure = new AzureOpenAI({ endpoint: az.url, apiKey: KEY, apiVersion: '2024-10-21', deployment: 'gpt4o-prod', maxRetries: 0 });
    const chat = await azure.chat.completions.create({ model: 'ignored', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(chat.choices[0]!.message.content, 'Hello from gpt4o-prod');
    assert.equal(lastRequest().path, '/openai/deployments/gpt4o-prod/chat/completions');
    assert.equal(lastRequest().query.get('api-version'), '2024-10-21');
    assert.equal(lastRequest().auth, 'api-key');
    const embed = new AzureOpenAI({ endpoint: az.url, apiKey: KEY, apiVersion: '2024-10-21', deployment: 'embed-small', maxRetries: 0 });
    const vectors = await embed.embeddings.create({ model: 'x', input: ['ab', 'abc'] });
    assert.deepEqual(vectors.data.map((d) => d.embedding), [[0, 2], [1, 3]]);
    const responses = new AzureOpenAI({ endpoint: az.url, apiKey: KEY, apiVersion: '2025-04-01-preview', maxRetries: 0 });
    const resp = await responses.responses.create({ model: 'gpt4o-prod', input: 'hi' });
    assert.equal(resp.output_text, 'Responses from gpt4o-prod');
    assert.equal(lastRequest().path, '/openai/responses');
    assert.equal(lastRequest().query.get('api-version'), '2025-04-01-preview');
  });

  test('the stock OpenAI client on the v1 family (key as bearer) is accepted; a wrong key, no api-version or an unknown deployment get Azure\'s errors', async () => {
    const v1 = new OpenAI({ baseURL: `${az.url}/openai/v1/`, apiKey: KEY, maxRetries: 0 });
    const chat = await v1.chat.completions.create({ model: 'gpt4o-prod', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(chat.choices[0]!.message.content, 'Hello from gpt4o-prod');
    assert.equal(lastRequest().auth, 'bearer-key');
    const wrong = new AzureOpenAI({ endpoint: az.url, apiKey: 'wrong-key', apiVersion: '2024-10-21', deployment: 'gpt4o-prod', maxRetries: 0 });
    await assert.rejects(wrong.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => err instanceof OpenAI.AuthenticationError && /invalid subscription key/.test(err.message));
    const post = (path: string) => fetch(`${az.url}${path}`, { method: 'POST', headers: { 'api-key': KEY, 'content-type': 'application/json' }, body: '{"messages":[]}' });
    const noVersion = await post('/openai/deployments/gpt4o-prod/chat/completions');
    assert.deepEqual([noVersion.status, await noVersion.json()], [404, { error: { code: '404', message: 'Resource not found' } }]);
    const badVersion = await post('/openai/deployments/gpt4o-prod/chat/completions?api-version=2019-01-01');
    assert.equal(badVersion.status, 400);
    const noDeployment = await post('/openai/deployments/nope/chat/completions?api-version=2024-10-21');
    assert.equal(((await noDeployment.json()) as Json).error.code, 'DeploymentNotFound');
  });
});

describe('through the gateway: the openai SDK on an azure provider', () => {
  test('chat (v1 family): /openai/v1/chat/completions, api-key header, deployment as model; the filter annotations in the record, not the answer', async () => {
    const { data, response } = await client.chat.completions.create({ model: 'az/gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 }).withResponse();
    assert.equal(data.choices[0]!.message.content, 'Hello from gpt4o-prod');
    assert.equal(data.choices[0]!.finish_reason, 'stop');
    assert.deepEqual([data.usage?.prompt_tokens, data.usage?.completion_tokens], [11, 4]);
    assert.equal('prompt_filter_results' in (data as unknown as Json), false);
    assert.equal('content_filter_results' in (data.choices[0] as unknown as Json), false);
    const req = lastRequest();
    assert.deepEqual([req.path, req.query.toString(), req.auth, req.headers.authorization, req.body?.model, req.body?.max_completion_tokens], ['/openai/v1/chat/completions', '', 'api-key', undefined, 'gpt4o-prod', 50]);
    const row = await record(response.headers.get('x-op-generation-id'));
    assert.equal(row.provider, 'az');
    assert.deepEqual(row.detail.provider_metadata, { prompt_filter_results: PROMPT_FILTER_RESULTS, content_filter_results: SAFE_RESULTS });
    const shown = (await (await fetch(`${gw.baseURL}/generation?id=${row.id}`, { headers: { authorization: `Bearer ${gw.adminKey}` } })).json()) as Json;
    assert.deepEqual(shown.data.provider_metadata, { prompt_filter_results: PROMPT_FILTER_RESULTS, content_filter_results: SAFE_RESULTS });
  });

  test('chat (deployment family): the deployment in the path, api-version 2024-10-21', async () => {
    const data = await client.chat.completions.create({ model: 'az/gpt-4o-dated', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(data.choices[0]!.message.content, 'Hello from gpt4o-dated');
    const req = lastRequest();
    assert.deepEqual([req.path, req.query.get('api-version'), req.auth, req.body?.model], ['/openai/deployments/gpt4o-dated/chat/completions', '2024-10-21', 'api-key', 'gpt4o-dated']);
  });

  test('stream: the text in order, no empty-id or annotation-only chunk reaches the client, usage at the end; annotations in the record', async () => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'az/gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    const events = sseJsonEvents(text);
    assert.equal(events.map((e) => e.choices?.[0]?.delta?.content ?? '').join(''), 'Hello from gpt4o-prod');
    assert.ok(events.every((e) => typeof e.id === 'string' && e.id !== '' && e.object === 'chat.completion.chunk'), 'every chunk is a proper chunk');
    assert.equal(/filter_results|content_filter_offsets/.test(text), false);
    assert.deepEqual(events.filter((e) => e.choices?.[0]?.finish_reason).map((e) => e.choices[0].finish_reason), ['stop']);
    assert.deepEqual([events.at(-1)!.usage?.prompt_tokens, events.at(-1)!.usage?.completion_tokens], [11, 4]);
    assert.equal(lastRequest().body?.stream_options?.include_usage, true);
    const row = await record(res.headers.get('x-op-generation-id'));
    assert.deepEqual(row.detail.provider_metadata.prompt_filter_results, PROMPT_FILTER_RESULTS);
    assert.deepEqual(row.detail.provider_metadata.content_filter_results, SAFE_RESULTS);
  });

  test('the openai SDK streams (v1) and calls tools (stream and not)', async () => {
    const stream = await client.chat.completions.create({ model: 'az/gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let out = '';
    for await (const chunk of stream) out += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(out, 'Hello from gpt4o-prod');
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const called = await client.chat.completions.create({ model: 'az/gpt-4o', tools, tool_choice: 'auto', messages: [{ role: 'user', content: 'weather?' }] });
    assert.equal(called.choices[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(called.choices[0]!.message.tool_calls?.map((c) => c.type === 'function' && [c.id, c.function.name, c.function.arguments]), [['call_az1', 'get_weather', '{"city":"Paris"}']]);
    assert.equal(lastRequest().body?.tools?.[0]?.function?.name, 'get_weather');
    const streamed = await client.chat.completions.create({ model: 'az/gpt-4o-dated', stream: true, tools, messages: [{ role: 'user', content: 'weather?' }] });
    const args: string[] = [];
    let name = '';
    let finish = '';
    for await (const chunk of streamed) {
      const tc = chunk.choices[0]?.delta?.tool_calls?.[0];
      if (tc?.function?.name) name = tc.function.name;
      if (tc?.function?.arguments) args.push(tc.function.arguments);
      if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
    }
    assert.deepEqual([name, args.join(''), finish], ['get_weather', '{"city":"Paris"}', 'tool_calls']);
  });

  test('Responses go natively: /openai/v1/responses (v1) and the dated /openai/responses?api-version=2025-04-01-preview, stream and not', async () => {
    const resp = await client.responses.create({ model: 'az/gpt-4o', input: 'hi' });
    assert.equal(resp.output_text, 'Responses from gpt4o-prod');
    assert.deepEqual([lastRequest().path, lastRequest().query.toString(), lastRequest().body?.model, lastRequest().body?.store], ['/openai/v1/responses', '', 'gpt4o-prod', false]);
    const dated = await client.responses.create({ model: 'az/gpt-4o-dated', input: 'hi' });
    assert.equal(dated.output_text, 'Responses from gpt4o-dated');
    assert.deepEqual([lastRequest().path, lastRequest().query.get('api-version'), lastRequest().body?.model], ['/openai/responses', '2025-04-01-preview', 'gpt4o-dated']);
    const stream = await client.responses.create({ model: 'az/gpt-4o', input: 'hi', stream: true });
    let text = '';
    let status = '';
    for await (const ev of stream) {
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') status = ev.response.status ?? '';
    }
    assert.deepEqual([text, status, lastRequest().body?.stream], ['Responses from gpt4o-prod', 'completed', true]);
  });

  test('embeddings on both families; legacy completions natively on the deployment family', async () => {
    const v1 = await client.embeddings.create({ model: 'az/embed', input: ['hello', 'hi'] });
    assert.deepEqual(v1.data.map((d) => d.embedding), [[0, 5], [1, 2]]);
    assert.deepEqual([lastRequest().path, lastRequest().body?.model], ['/openai/v1/embeddings', 'embed-small']);
    const dated = await client.embeddings.create({ model: 'az/embed-dated', input: 'abc' });
    assert.deepEqual(dated.data.map((d) => d.embedding), [[0, 3]]);
    assert.deepEqual([lastRequest().path, lastRequest().query.get('api-version')], ['/openai/deployments/embed-small/embeddings', '2024-10-21']);
    const done = await client.completions.create({ model: 'az/instruct', prompt: 'Say', max_tokens: 5 });
    assert.equal(done.choices[0]!.text, ' completed by instruct');
    assert.deepEqual([lastRequest().path, lastRequest().body?.prompt, lastRequest().body?.max_tokens], ['/openai/deployments/instruct/completions', 'Say', 5]);
  });
});

describe('through the gateway: the Anthropic SDK on /v1/messages, translated to an azure endpoint', () => {
  test('text and stop reasons: end_turn, and refusal for an answer the filter cut', async () => {
    const anthropic = new Anthropic({ baseURL: gw.origin, apiKey: gw.adminKey, maxRetries: 0 });
    const msg = await anthropic.messages.create({ model: 'az/gpt-4o', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual([msg.content[0]?.type === 'text' && msg.content[0].text, msg.stop_reason], ['Hello from gpt4o-prod', 'end_turn']);
    assert.deepEqual([lastRequest().path, lastRequest().body?.model, lastRequest().body?.max_completion_tokens], ['/openai/v1/chat/completions', 'gpt4o-prod', 64]);
    const cut = await anthropic.messages.create({ model: 'az/gpt-4o', max_tokens: 64, messages: [{ role: 'user', content: 'BLOCK-OUTPUT please' }] });
    assert.equal(cut.stop_reason, 'refusal');
  });
});

describe('Azure\'s content filter and rate limits', () => {
  test('a filtered answer finishes content_filter (stream and not); the filtered category is in the record', async () => {
    const { data, response } = await client.chat.completions.create({ model: 'az/gpt-4o', messages: [{ role: 'user', content: 'BLOCK-OUTPUT please' }] }).withResponse();
    assert.deepEqual([data.choices[0]!.finish_reason, data.choices[0]!.message.content], ['content_filter', 'Partial']);
    const row = await record(response.headers.get('x-op-generation-id'));
    assert.deepEqual([row.finish_reason, row.native_finish_reason], ['content_filter', 'content_filter']);
    assert.deepEqual(row.detail.provider_metadata.content_filter_results, VIOLENCE_FILTERED);
    assert.deepEqual(row.detail.provider_metadata.filtered, ['violence']);
    const stream = await client.chat.completions.create({ model: 'az/gpt-4o', stream: true, messages: [{ role: 'user', content: 'BLOCK-OUTPUT please' }] });
    const finishes: string[] = [];
    for await (const chunk of stream) if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
    assert.deepEqual(finishes, ['content_filter']);
  });

  test('a blocked prompt is content_filtered (400, param prompt, the verdict in metadata and the record), tried once: not on the model\'s other endpoint', async () => {
    const before = az.requests.length;
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'az/two', messages: [{ role: 'user', content: 'BLOCK-PROMPT now' }] }),
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as Json;
    assert.deepEqual([body.error.code, body.error.type, body.error.param], ['content_filtered', 'invalid_request_error', 'prompt']);
    assert.match(body.error.message, /content management policy/);
    assert.deepEqual(body.error.metadata.provider_metadata.content_filter_result.jailbreak, { filtered: true, detected: true });
    assert.equal(az.requests.length - before, 1);
    const row = await record(res.headers.get('x-op-generation-id'));
    assert.deepEqual([row.error_code, row.http_status], ['content_filtered', 400]);
    assert.deepEqual(row.detail.provider_metadata, { content_filter_result: BLOCKED_PROMPT_BODY.error.innererror.content_filter_result });
    assert.deepEqual(row.detail.error.upstream, { status: 400, code: 'content_filter', type: null, param: 'prompt' });
  });

  test('a 429 with retry-after-ms fails over to the next endpoint within the request; the record names both attempts', async () => {
    const body = { model: 'az/fallback', messages: [{ role: 'user', content: 'hi' }], provider: { order: ['az', 'az-dated'] } } as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const { data, response } = await client.chat.completions.create(body).withResponse();
    assert.equal(data.choices[0]!.message.content, 'Hello from gpt4o-dated');
    const row = await record(response.headers.get('x-op-generation-id'));
    assert.deepEqual(row.detail.attempts.map((a: Json) => [a.endpoint, a.status, a.error_code]), [['az/throttled', 429, 'upstream_rate_limited'], ['az-dated/gpt4o-dated', 200, null]]);
  });

  test('the 429\'s retry-after-ms cools the endpoint: the next request goes straight to the other one', async () => {
    const cooled = await startGateway({
      routing: { circuit_breaker: { failure_threshold: 1000 }, retry_after_cap_ms: 60_000, recent_failure_ms: 0 },
      providers: [{ id: 'az', kind: 'azure', base_url: az.url, api_key: KEY }, { id: 'az-dated', kind: 'azure', base_url: az.url, api_key: KEY, azure_api: 'deployment' }],
      models: [{ id: 'az/fallback', context_length: 8192, endpoints: [{ provider: 'az', upstream_model: 'throttled' }, { provider: 'az-dated', upstream_model: 'gpt4o-dated' }] }],
    });
    try {
      const post = async () => {
        const res = await fetch(`${cooled.baseURL}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${cooled.adminKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'az/fallback', messages: [{ role: 'user', content: 'hi' }], provider: { order: ['az', 'az-dated'] } }),
        });
        assert.equal(res.status, 200);
        await cooled.flush();
        const row = await cooled.store.db.selectFrom('generations').select('detail').where('id', '=', res.headers.get('x-op-generation-id')!).executeTakeFirstOrThrow();
        return ((JSON.parse(row.detail) as Json).attempts as Json[]).map((a) => [a.endpoint, a.status]);
      };
      assert.deepEqual(await post(), [['az/throttled', 429], ['az-dated/gpt4o-dated', 200]]);
      const throttledCalls = az.requests.filter((r) => r.body?.model === 'throttled').length;
      assert.deepEqual(await post(), [['az-dated/gpt4o-dated', 200]]);
      assert.equal(az.requests.filter((r) => r.body?.model === 'throttled').length, throttledCalls, 'the cooled endpoint was not called');
    } finally {
      await cooled.close();
    }
  });

  test('the wait of a 429: retry-after-ms first (ms rounded up), then retry-after, then the message; the Responses API\'s blocked prompt (content_filters)', () => {
    assert.equal(azureRetryAfterSeconds({ 'retry-after-ms': '7001', 'retry-after': '2' }, ''), 8);
    assert.equal(azureRetryAfterSeconds({ 'retry-after': '3' }, 'Please retry after 37 seconds.'), 3);
    assert.equal(azureRetryAfterSeconds({}, 'Please retry after 37 seconds.'), 37);
    assert.equal(azureRetryAfterSeconds({}, 'slow down'), undefined);
    const err = parseAzureErrorResponse('az', 429, { 'retry-after-ms': '1500' }, '{"error":{"code":"429","message":"Rate limit is exceeded."}}');
    assert.deepEqual([err.code, err.retryAfterSeconds, err.status], ['upstream_rate_limited', 2, 429]);
    const responsesBlock = parseAzureErrorResponse('az', 400, {}, JSON.stringify({ error: { code: 'content_filter', message: 'The prompt was filtered.', param: null, content_filters: [{ blocked: true, source_type: 'prompt', content_filter_results: { hate: { filtered: true, severity: 'high' } } }] } }));
    assert.deepEqual([responsesBlock.code, responsesBlock.status, responsesBlock.param, responsesBlock.metadata?.provider_metadata], ['content_filtered', 400, 'messages', { content_filters: [{ blocked: true, source_type: 'prompt', content_filter_results: { hate: { filtered: true, severity: 'high' } } }] }]);
    const plain = parseAzureErrorResponse('az', 400, {}, '{"error":{"code":"BadRequest","message":"bad","param":"messages"}}');
    assert.deepEqual([plain.code, plain.param], ['upstream_bad_request', 'messages']);
  });
});

describe('azure config', () => {
  const provider = (extra: Json) => ({ providers: [{ id: 'az', kind: 'azure', base_url: 'https://res.openai.azure.com', ...extra }], models: [{ id: 'a/m', context_length: 1000, endpoints: [{ provider: 'az', upstream_model: 'dep' }] }] });

  test('URLs of both families, the endpoint\'s settings over the provider\'s; defaults v1 and 2024-10-21', () => {
    const cfg = parseConfig({ ...provider({ api_key: 'k' }), models: [{ id: 'a/m', context_length: 1000, endpoints: [{ provider: 'az', upstream_model: 'dep' }, { provider: 'az', upstream_model: 'x', azure_deployment: 'my.dep-1', azure_api: 'deployment' }, { provider: 'az', upstream_model: 'y', azure_api: 'deployment', azure_api_version: '2025-04-01-preview' }] }] }, 'test');
    const t = (i: number) => ({ provider: cfg.providers[0]!, endpoint: cfg.models[0]!.endpoints[i]! }) as unknown as ProviderTarget;
    assert.equal(azureUrl(t(0), '/chat/completions'), 'https://res.openai.azure.com/openai/v1/chat/completions');
    assert.equal(azureUrl(t(1), '/chat/completions'), 'https://res.openai.azure.com/openai/deployments/my.dep-1/chat/completions?api-version=2024-10-21');
    assert.equal(azureUrl(t(1), '/responses'), 'https://res.openai.azure.com/openai/responses?api-version=2025-04-01-preview');
    assert.equal(azureUrl(t(2), '/embeddings'), 'https://res.openai.azure.com/openai/deployments/y/embeddings?api-version=2025-04-01-preview');
  });

  test('entra blocks are checked at load with path-named messages; base_url is required', () => {
    const issues = (cfg: unknown) => {
      try {
        parseConfig(cfg, 'test');
        return '';
      } catch (err) {
        return (err as Error).message;
      }
    };
    assert.match(issues(provider({ entra: { credential: 'client_secret', tenant_id: 't', client_id: 'c' } })), /providers\[0\]\.entra\.client_secret: is required with credential "client_secret"/);
    assert.match(issues(provider({ entra: { credential: 'certificate', client_id: 'c' } })), /providers\[0\]\.entra\.tenant_id: is required with credential "certificate"/);
    assert.match(issues(provider({ entra: { authority_host: 'http://login.example' } })), /providers\[0\]\.entra\.authority_host: must be an https URL/);
    assert.match(issues(provider({ entra: { credential: 'magic' } })), /providers\[0\]\.entra\.credential/);
    assert.equal(issues(provider({ entra: { credential: 'managed_identity', client_id: 'c' } })), '');
    const withBase = (base_url: string) => ({ ...provider({ api_key: 'k' }), providers: [{ id: 'az', kind: 'azure', base_url, api_key: 'k' }] });
    assert.match(issues(withBase('https://r.openai.azure.com/openai/v1')), /providers\[0\]\.base_url: give the resource's origin \(https:\/\/r\.openai\.azure\.com\), without \/openai\/…/);
    assert.match(issues(withBase('https://r.openai.azure.com/openai/deployments/gpt4o/')), /providers\[0\]\.base_url: give the resource's origin/);
    assert.equal(issues(withBase('https://r.openai.azure.com')), '');
    assert.match(issues(provider({ api_key: 'k', azure_api_version: 'yesterday' })), /providers\[0\]\.azure_api_version: must be an api-version such as 2024-10-21/);
    assert.equal(issues(provider({ api_key: 'k', azure_api_version: '2025-04-01-preview', azure_responses_api_version: 'preview' })), '');
    assert.match(issues(provider({ api_key: 'k', entra: { credential: 'managed_identity' } })), /providers\[0\]\.api_key: an azure provider with entra authenticates with Entra ID tokens and never sends api_key/);
    const parsed = parseConfig(provider({ entra: {} }), 'test');
    assert.deepEqual(parsed.providers[0]!.entra, { credential: 'default', scope: 'https://cognitiveservices.azure.com/.default' });
    assert.match(issues({ ...provider({}), providers: [{ id: 'az', kind: 'azure' }] }), /base_url/);
    // Without secrets (key commands), an entra block's unset variables are not read.
    const entraFromEnv = provider({ entra: { credential: 'client_secret', tenant_id: '${AZ_T}', client_id: '${AZ_C}', client_secret: '${AZ_S}' } });
    assert.match(issues(entraFromEnv), /environment variable AZ_S is not set/);
    assert.equal(parseConfig(entraFromEnv, 'test', {}, { secrets: false }).providers[0]!.entra, undefined);
    assert.match(issues({ ...provider({}), models: [{ id: 'a/m', context_length: 1000, endpoints: [{ provider: 'az', upstream_model: 'dep', supports_responses: true }] }] }), /"azure" endpoints serve \/v1\/responses natively without it/);
    assert.match(issues({ ...provider({}), models: [{ id: 'a/m', context_length: 1000, endpoints: [{ provider: 'az', upstream_model: 'dep', azure_deployment: 'has space' }] }] }), /azure_deployment: must be an Azure deployment name/);
  });
});
