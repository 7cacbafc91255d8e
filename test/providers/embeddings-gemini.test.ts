/**
 * POST /v1/embeddings served by `gemini` endpoints (`batchEmbedContents`), with the official
 * `openai` SDK against the gateway on port 0 and a scripted Gemini upstream on port 0 that
 * records every request it receives.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { estimateTextTokens } from '../../src/accounting/estimate-tokens.js';
import { parseConfig } from '../../src/config/load.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { openapiAvailable, validateAgainst } from '../helpers/openapi.js';
import { startUpstream, type ScriptedResponse, type Upstream } from '../helpers/replay-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const noSpec = openapiAvailable() ? false : 'the OpenAI spec ../shared/specs/openai-openapi.yaml is absent';

/** Float32-exact vector values, so base64 (float32) round-trips to the same numbers. */
const vec = (n: number): number[] => [n, n + 0.5, -n / 4];

/** A scripted `batchEmbedContents` answer with one vector per value of `ns`. */
const geminiVectors = (...ns: number[]): ScriptedResponse => ({ json: { embeddings: ns.map((n) => ({ values: vec(n) })) } });

const PRICE = 0.15; // USD per 1M prompt tokens
const BATCH_PATH = '/v1beta/models/gemini-embedding-001:batchEmbedContents';

/** The gateway's estimate of a request's tokens: the tokenizer's count of each input, summed. */
const estimated = (inputs: string[]) => inputs.reduce((sum, t) => sum + estimateTextTokens(t), 0);

describe('POST /v1/embeddings through gemini endpoints', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    upstream = await startUpstream();
    const origin = upstream.url.replace(/\/v1$/, '');
    const gemini = (provider: string, extra: Record<string, unknown> = {}) => ({
      provider, upstream_model: 'gemini-embedding-001', embeddings: true, pricing: { prompt: PRICE }, ...extra,
    });
    gw = await startGateway({
      providers: [
        { id: 'gem', kind: 'gemini', base_url: origin, api_key: 'g-key-good' },
        { id: 'gem-down', kind: 'gemini', base_url: origin, api_key: 'g-key-down' },
        { id: 'oai', kind: 'openai', base_url: upstream.url, api_key: 'sk-oai' },
      ],
      models: [
        {
          id: 'google/embed',
          context_length: 2048,
          architecture: { input_modalities: ['text'], output_modalities: ['embeddings'] },
          endpoints: [gemini('gem', { max_embedding_inputs: 2 })],
        },
        { id: 'google/embed-failover', context_length: 2048, endpoints: [gemini('gem-down'), gemini('gem')] },
        // max_embedding_inputs left at its default (2048): Gemini's own limit of 100 applies.
        { id: 'google/embed-default', context_length: 2048, endpoints: [gemini('gem')] },
        {
          id: 'mixed/embed',
          context_length: 2048,
          endpoints: [gemini('gem'), { provider: 'oai', upstream_model: 'text-embedding-3-small', embeddings: true, pricing: { prompt: 0.02 } }],
        },
      ],
    });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  });

  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const generation = async (id: string): Promise<Json> =>
    ((await (await fetch(`${gw.baseURL}/generation?id=${id}`, { headers: { authorization: `Bearer ${gw.adminKey}` } })).json()) as Json).data;

  test('5 inputs, batches of 2: three batchEmbedContents calls in order, exact bodies, vectors back in order, estimated usage priced', async () => {
    upstream.requests.length = 0;
    upstream.enqueue(geminiVectors(1, 2), geminiVectors(3, 4), geminiVectors(5));
    const inputs = ['alpha', 'beta gamma', 'delta', 'epsilon zeta eta', 'theta'];
    const { data, response } = await client.embeddings
      .create({ model: 'google/embed', input: inputs, dimensions: 3, encoding_format: 'float' })
      .withResponse();

    assert.equal(upstream.requests.length, 3);
    const request = (texts: string[]) => ({
      requests: texts.map((text) => ({ model: 'models/gemini-embedding-001', content: { parts: [{ text }] }, outputDimensionality: 3 })),
    });
    assert.deepEqual(upstream.requests.map((r) => r.json), [request(['alpha', 'beta gamma']), request(['delta', 'epsilon zeta eta']), request(['theta'])]);
    for (const r of upstream.requests) {
      assert.equal(r.method, 'POST');
      assert.equal(r.path, BATCH_PATH);
      assert.equal(r.headers['x-goog-api-key'], 'g-key-good');
      assert.equal(r.headers.authorization, undefined, 'Gemini takes its key in x-goog-api-key only');
    }

    assert.deepEqual(data.data.map((d) => [d.index, d.embedding]), [[0, vec(1)], [1, vec(2)], [2, vec(3)], [3, vec(4)], [4, vec(5)]]);
    assert.equal(data.model, 'google/embed');
    const tokens = estimated(inputs);
    assert.equal(tokens, 9, 'the tokenizer\'s count of the five inputs');
    assert.deepEqual(data.usage, { prompt_tokens: tokens, total_tokens: tokens, cost: 0.00000135 } as typeof data.usage, '9 tokens × $0.15 per 1M, exact');
    if (!noSpec) assert.deepEqual(validateAgainst('CreateEmbeddingResponse', data), []);

    const record = await generation(response.headers.get('x-op-generation-id')!);
    assert.equal(record.api_type, 'embeddings');
    assert.equal(record.status, 'success');
    assert.equal(record.provider_name, 'gem');
    assert.equal(record.endpoint, 'gem/gemini-embedding-001');
    assert.equal(record.tokens_prompt, tokens);
    assert.equal(record.tokens_completion, null);
    assert.equal(record.usage_source, 'estimated');
    assert.equal(record.total_cost_usd, '0.00000135');
  });

  test('the SDK default (base64): the gateway encodes Gemini\'s floats as float32 and the SDK decodes the same numbers', async () => {
    upstream.requests.length = 0;
    upstream.enqueue(geminiVectors(7));
    const res = await client.embeddings.create({ model: 'google/embed', input: 'hello' });
    // Nothing about the encoding goes to Gemini (it has no such field), and no dimensions were asked.
    assert.deepEqual(upstream.requests[0]!.json, { requests: [{ model: 'models/gemini-embedding-001', content: { parts: [{ text: 'hello' }] } }] });
    assert.deepEqual(res.data[0]!.embedding, vec(7));

    // The raw body carries the base64 text OpenAI would send for those floats.
    upstream.enqueue(geminiVectors(7));
    const raw = (await (await client.embeddings.create({ model: 'google/embed', input: 'hello', encoding_format: 'base64' }).asResponse()).json()) as Json;
    assert.equal(raw.data[0].embedding, Buffer.from(new Float32Array(vec(7)).buffer).toString('base64'));
  });

  test('failover: a failing gemini endpoint (503 UNAVAILABLE) gives way to the next gemini endpoint; the record shows both attempts', async () => {
    upstream.requests.length = 0;
    upstream.enqueue(
      { status: 503, json: { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } } },
      geminiVectors(9, 10),
    );
    const { data, response } = await client.embeddings
      .create({ model: 'google/embed-failover', input: ['one', 'two'], encoding_format: 'float', provider: { order: ['gem-down', 'gem'] } } as OpenAI.EmbeddingCreateParams)
      .withResponse();
    assert.deepEqual(upstream.requests.map((r) => r.headers['x-goog-api-key']), ['g-key-down', 'g-key-good']);
    assert.deepEqual(data.data.map((d) => d.embedding), [vec(9), vec(10)]);
    const record = await generation(response.headers.get('x-op-generation-id')!);
    assert.equal(record.provider_name, 'gem');
    assert.deepEqual(record.provider_responses.map((a: Json) => [a.provider, a.status]), [['gem-down', 503], ['gem', 200]]);
    assert.equal(record.tokens_prompt, estimated(['one', 'two']));
    assert.equal(record.usage_source, 'estimated');
  });

  test('token-id inputs to a model served by gemini only: a 400 naming input, nothing sent upstream', async () => {
    upstream.requests.length = 0;
    await assert.rejects(client.embeddings.create({ model: 'google/embed', input: [[1, 2, 3]], encoding_format: 'float' }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 400);
      assert.equal((err.error as Json).code, 'unsupported_parameter');
      assert.equal((err.error as Json).param, 'input');
      assert.match(err.message, /token-id inputs.*gemini embeds text only/);
      return true;
    });
    assert.equal(upstream.requests.length, 0);
  });

  test('a later batch failing: the batches already embedded are in the record (usage and cost), the client gets the error', async () => {
    upstream.requests.length = 0;
    upstream.enqueue(geminiVectors(1, 2), { status: 500, json: { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } } });
    const res = await fetch(`${gw.baseURL}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.adminKey}` },
      body: JSON.stringify({ model: 'google/embed', input: ['alpha', 'beta gamma', 'delta'], encoding_format: 'float', provider: { allow_fallbacks: false } }),
    });
    assert.equal(res.status, 502);
    assert.equal(upstream.requests.length, 2);
    const record = await generation(res.headers.get('x-op-generation-id')!);
    assert.equal(record.tokens_prompt, estimated(['alpha', 'beta gamma']), 'the first batch, embedded and billed');
    assert.equal(record.usage_source, 'estimated');
    assert.ok(record.total_cost > 0);
  });

  test('an input longer than the context window: a 400 context_length_exceeded naming input, nothing sent upstream', async () => {
    upstream.requests.length = 0;
    await assert.rejects(client.embeddings.create({ model: 'google/embed', input: ['short', 'word '.repeat(20_000)], encoding_format: 'float' }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 400);
      assert.equal((err.error as Json).code, 'context_length_exceeded');
      assert.equal((err.error as Json).param, 'input');
      assert.match(err.message, /the longest input does not fit the context window of "google\/embed"/);
      return true;
    });
    assert.equal(upstream.requests.length, 0);
  });

  test('token-id inputs to a model with a gemini and an openai endpoint: served by the openai endpoint', async () => {
    upstream.requests.length = 0;
    upstream.enqueue({ json: { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.25, 0.5] }], model: 'text-embedding-3-small', usage: { prompt_tokens: 3, total_tokens: 3 } } });
    const res = await client.embeddings.create({ model: 'mixed/embed', input: [[5, 6, 7]], encoding_format: 'float', provider: { order: ['gem', 'oai'] } } as OpenAI.EmbeddingCreateParams);
    assert.deepEqual(upstream.requests.map((r) => r.path), ['/v1/embeddings']);
    assert.deepEqual((upstream.requests[0]!.json as Json).input, [[5, 6, 7]]);
    assert.deepEqual(res.data[0]!.embedding, [0.25, 0.5]);
    assert.equal(res.usage.prompt_tokens, 3);
  });

  test('an endpoint with the default max_embedding_inputs sends at most 100 inputs per call (Gemini\'s limit)', async () => {
    upstream.requests.length = 0;
    const inputs = Array.from({ length: 101 }, (_, i) => `text ${i}`);
    upstream.enqueue(geminiVectors(...inputs.slice(0, 100).map((_, i) => i)), geminiVectors(100));
    const res = await client.embeddings.create({ model: 'google/embed-default', input: inputs, encoding_format: 'float' });
    assert.deepEqual(upstream.requests.map((r) => (r.json as Json).requests.length), [100, 1]);
    assert.equal((upstream.requests[1]!.json as Json).requests[0].content.parts[0].text, 'text 100');
    assert.equal(res.data.length, 101);
    assert.deepEqual(res.data[100]!.embedding, vec(100));
  });

  test('an answer with fewer vectors than inputs is upstream_invalid_response, not a short list', async () => {
    upstream.enqueue(geminiVectors(1));
    await assert.rejects(client.embeddings.create({ model: 'google/embed', input: ['a', 'b'], encoding_format: 'float' }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 502);
      assert.equal((err.error as Json).code, 'upstream_invalid_response');
      return true;
    });
  });
});

describe('gemini embeddings config', () => {
  test('embeddings: true is accepted on gemini and local endpoints', () => {
    const config = parseConfig({
      providers: [{ id: 'g', kind: 'gemini', api_key: 'k' }, { id: 'l', kind: 'local' }],
      models: [
        { id: 'x/g', context_length: 2048, endpoints: [{ provider: 'g', upstream_model: 'gemini-embedding-001', embeddings: true }] },
        { id: 'x/l', context_length: 2048, endpoints: [{ provider: 'l', upstream_model: './models/embed.gguf', embeddings: true }] },
      ],
    }, 'test');
    assert.deepEqual(config.models.map((m) => m.endpoints[0]!.embeddings), [true, true]);
  });

  test('max_embedding_inputs above Gemini\'s 100 per call is refused at start', () => {
    assert.throws(
      () => parseConfig({
        providers: [{ id: 'g', kind: 'gemini', api_key: 'k' }],
        models: [{ id: 'x/g', context_length: 2048, endpoints: [{ provider: 'g', upstream_model: 'gemini-embedding-001', embeddings: true, max_embedding_inputs: 101 }] }],
      }, 'test'),
      /models\[0\]\.endpoints\[0\]\.max_embedding_inputs: provider kind "gemini" takes at most 100 inputs per embeddings call \(got 101\)/,
    );
  });
});
