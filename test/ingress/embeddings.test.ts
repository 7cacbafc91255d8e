/** POST /v1/embeddings with the official `openai` SDK against a scripted upstream on port 0. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { parseConfig } from '../../src/config/load.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

/** A deterministic vector for an input: [length, first char code, batch position]. */
const vectorFor = (input: string | number[], position: number): number[] => [input.length, typeof input === 'string' ? input.charCodeAt(0) : input[0]!, position];

const base64Of = (v: number[]): string => Buffer.from(new Float32Array(v).buffer).toString('base64');

describe('POST /v1/embeddings', () => {
  let upstream: Server;
  let gw: TestGateway;
  let client: OpenAI;
  /** The bodies the upstream received, in order. */
  const calls: Record<string, unknown>[] = [];

  before(async () => {
    upstream = createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        const body = JSON.parse(text) as { model: string; input: Array<string | number[]>; encoding_format?: string };
        calls.push(body);
        if (req.url !== '/embeddings') {
          res.writeHead(404).end();
          return;
        }
        const data = body.input.map((input, i) => {
          const v = vectorFor(input, i);
          return { object: 'embedding', index: i, embedding: body.encoding_format === 'base64' ? base64Of(v) : v };
        });
        const promptTokens = body.input.length * 3;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } }));
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    gw = await startGateway({
      providers: [{ id: 'up', kind: 'openai', base_url: url, api_key: 'sk-upstream' }],
      models: [
        {
          id: 'test/embed',
          context_length: 8192,
          architecture: { input_modalities: ['text'], output_modalities: ['embeddings'] },
          endpoints: [{ provider: 'up', upstream_model: 'upstream-embed', embeddings: true, max_embedding_inputs: 2, pricing: { prompt: 0.02 } }],
        },
        { id: 'test/chat', context_length: 8192, endpoints: [{ provider: 'up', upstream_model: 'upstream-chat' }] },
      ],
    });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  });

  after(async () => {
    await gw.close();
    await new Promise((resolve) => upstream.close(resolve));
  });

  test('a batch larger than the endpoint limit is sent in order, in batches, and comes back whole', async () => {
    calls.length = 0;
    const { data, response } = await client.embeddings
      .create({ model: 'test/embed', input: ['alpha', 'beta', 'gamma'], encoding_format: 'float' })
      .withResponse();
    assert.deepEqual(calls.map((c) => c.input), [['alpha', 'beta'], ['gamma']]);
    assert.equal(calls[0]!.model, 'upstream-embed');
    assert.deepEqual(data.data.map((d) => [d.index, d.embedding]), [[0, [5, 97, 0]], [1, [4, 98, 1]], [2, [5, 103, 0]]]);
    assert.equal(data.model, 'test/embed');
    assert.deepEqual(data.usage, { prompt_tokens: 9, total_tokens: 9, cost: 9 * 0.02 / 1e6 } as typeof data.usage);

    const id = response.headers.get('x-op-generation-id')!;
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(row.api, 'embeddings');
    assert.equal(row.status, 'success');
    assert.equal(row.served_model, 'test/embed');
    assert.equal(row.prompt_tokens, 9);
    assert.equal(row.completion_tokens, null);
    assert.equal(row.usage_source, 'upstream');
    assert.equal(BigInt(row.cost_pico), 180_000n);
  });

  test('the SDK default (base64) passes through and decodes to the upstream floats', async () => {
    calls.length = 0;
    const res = await client.embeddings.create({ model: 'test/embed', input: 'hello' });
    assert.equal(calls[0]!.encoding_format, 'base64');
    assert.deepEqual(res.data[0]!.embedding, [5, 104, 0]);
  });

  test('token-id inputs and dimensions go upstream as sent', async () => {
    calls.length = 0;
    const res = await client.embeddings.create({ model: 'test/embed', input: [[7, 8, 9]], dimensions: 64, encoding_format: 'float' });
    assert.deepEqual(calls[0], { model: 'upstream-embed', input: [[7, 8, 9]], dimensions: 64, encoding_format: 'float' });
    assert.deepEqual(res.data[0]!.embedding, [3, 7, 0]);
  });

  test('a model without an embeddings endpoint is a clear 404 naming model', async () => {
    await assert.rejects(client.embeddings.create({ model: 'test/chat', input: 'x' }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 404);
      assert.equal((err.error as { code: string }).code, 'no_endpoint_available');
      assert.equal((err.error as { param: string }).param, 'model');
      return true;
    });
  });

  test('bad input is a 400 naming the param', async () => {
    await assert.rejects(client.embeddings.create({ model: 'test/embed', input: [] as string[] }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 400);
      assert.equal((err.error as { param: string }).param, 'input');
      return true;
    });
  });

  test('a chat request to an embedding model is a 404 naming model, with no upstream call', async () => {
    const before = calls.length;
    await assert.rejects(client.chat.completions.create({ model: 'test/embed', messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 404);
      assert.equal((err.error as { code: string }).code, 'no_endpoint_available');
      assert.equal((err.error as { param: string }).param, 'model');
      assert.equal(err.message.includes('"test/embed" is an embedding model'), true, err.message);
      return true;
    });
    assert.equal(calls.length, before, 'nothing sent upstream');
  });

  test('the model lists its output modality', async () => {
    const res = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${gw.adminKey}` } });
    const body = (await res.json()) as { data: Array<{ id: string; architecture: { output_modalities: string[] } }> };
    assert.deepEqual(body.data.find((m) => m.id === 'test/embed')?.architecture.output_modalities, ['embeddings']);
  });
});

describe('embeddings config', () => {
  test('an embeddings endpoint on a kind without embeddings is refused at start', () => {
    assert.throws(
      () => parseConfig({
        providers: [{ id: 'a', kind: 'anthropic', api_key: 'k' }],
        models: [{ id: 'x/y', context_length: 1000, endpoints: [{ provider: 'a', upstream_model: 'm', embeddings: true }] }],
      }, 'test'),
      /models\[0\]\.endpoints\[0\]\.embeddings: provider kind "anthropic" does not serve embeddings/,
    );
  });
});
