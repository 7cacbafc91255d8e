/**
 * POST /v1/embeddings served by a `local` endpoint: the real llama.cpp engine (node-llama-cpp)
 * in its child process, embedding with a tiny random-weight llama model written at test time
 * (test/helpers/tiny-gguf.ts), through the gateway, with the official OpenAI SDK. The vectors
 * mean nothing; their length, determinism, the token counts and the protocol are real.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { Llama, LlamaModel } from 'node-llama-cpp';
import { createEmbedder } from '../../src/providers/local/engine-embed.js';
import { stopLocalEngines } from '../../src/providers/local/engine-supervisor.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { openapiAvailable, validateAgainst } from '../helpers/openapi.js';
import { byteToken, TINY_VOCAB_SIZE, writeTinyLlamaGguf } from '../helpers/tiny-gguf.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** node-llama-cpp and its prebuilt CPU binary, or why they are not usable here. */
async function loadLlama(): Promise<{ lib: typeof import('node-llama-cpp'); llama: Llama } | string> {
  try {
    const lib = await import('node-llama-cpp');
    return { lib, llama: await lib.getLlama({ gpu: false, build: 'never', progressLogs: false, logLevel: lib.LlamaLogLevel.error }) };
  } catch (err) {
    return `node-llama-cpp or its prebuilt binary is not usable here: ${(err as Error).message}`;
  }
}

const engineLib = await loadLlama();
const skip = typeof engineLib === 'string' ? engineLib : false;
if (skip) process.stderr.write(`local embeddings tests skipped: ${skip}\n`);

const EMBEDDING_WIDTH = 48;
const ENGINE_CONTEXT = 256;
const PRICE = 0.01; // USD per 1M prompt tokens

describe('local provider: embeddings from the llama.cpp engine through the gateway', { skip }, () => {
  let dir: string;
  let modelPath: string;
  let model: LlamaModel;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    if (typeof engineLib === 'string') return;
    dir = mkdtempSync(path.join(tmpdir(), 'op-local-embed-'));
    modelPath = path.join(dir, 'tiny-embed.gguf');
    writeTinyLlamaGguf(modelPath, { embedding: EMBEDDING_WIDTH, contextLength: 1024, seed: 3 });
    // The test's own view of the model, to count tokens the way the engine must.
    model = await engineLib.llama.loadModel({ modelPath, gpuLayers: 0, vocabOnly: true });
    gw = await startGateway({
      providers: [{ id: 'loc', kind: 'local', local: { context_size: ENGINE_CONTEXT, threads: 1, parallel_sequences: 1 } }],
      models: [
        {
          id: 'local/embed',
          // Larger than the engine's context: the engine's own bound is what refuses a long input.
          context_length: 4096,
          architecture: { input_modalities: ['text'], output_modalities: ['embeddings'] },
          endpoints: [{ provider: 'loc', upstream_model: modelPath, embeddings: true, max_embedding_inputs: 2, pricing: { prompt: PRICE } }],
        },
      ],
    });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0, timeout: 120_000 });
  });

  after(async () => {
    await gw?.close();
    await stopLocalEngines();
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Tokens the engine evaluates for a text: the model's tokenizer, plus the begin/end tokens it adds. */
  const tokensOf = (text: string) =>
    model.tokenize(text).length + (model.tokens.shouldPrependBosToken ? 1 : 0) + (model.tokens.shouldAppendEosToken ? 1 : 0);

  const embed = (input: string | string[] | number[][], extra: Partial<OpenAI.EmbeddingCreateParams> = {}) =>
    client.embeddings.create({ model: 'local/embed', input, encoding_format: 'float', ...extra });

  test('a vector of the model\'s embedding length, the same for the same input, usage the engine\'s token count', async () => {
    const { data, response } = await embed('hello world').withResponse();
    assert.equal(data.data.length, 1);
    const vector = data.data[0]!.embedding;
    assert.equal(vector.length, EMBEDDING_WIDTH);
    assert.ok(vector.every((x) => Number.isFinite(x)) && vector.some((x) => x !== 0), 'real numbers, not all zero');
    assert.equal(tokensOf('hello world'), 12, 'the byte-level vocabulary: BOS and one token per character (the space as the ▁ piece)');
    assert.deepEqual(data.usage, { prompt_tokens: 12, total_tokens: 12, cost: 0.00000012 } as typeof data.usage, '12 tokens × $0.01 per 1M, exact');
    if (openapiAvailable()) assert.deepEqual(validateAgainst('CreateEmbeddingResponse', data), []);

    const again = await embed('hello world');
    assert.deepEqual(again.data[0]!.embedding, vector, 'deterministic');
    const other = await embed('goodbye');
    assert.notDeepEqual(other.data[0]!.embedding, vector);

    const record = ((await (await fetch(`${gw.baseURL}/generation?id=${response.headers.get('x-op-generation-id')}`, { headers: { authorization: `Bearer ${gw.adminKey}` } })).json()) as Json).data;
    assert.equal(record.api_type, 'embeddings');
    assert.equal(record.provider_name, 'loc');
    assert.equal(record.tokens_prompt, 12);
    assert.equal(record.usage_source, 'upstream');
    assert.equal(record.total_cost_usd, '0.00000012');
  });

  test('5 inputs in batches of 2: each vector is the one the input gets alone, in order; usage summed', async () => {
    const inputs = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
    const alone = await Promise.all(inputs.map(async (t) => (await embed(t)).data[0]!.embedding));
    const res = await embed(inputs);
    assert.deepEqual(res.data.map((d) => d.index), [0, 1, 2, 3, 4]);
    assert.deepEqual(res.data.map((d) => d.embedding), alone);
    const tokens = inputs.reduce((sum, t) => sum + tokensOf(t), 0);
    assert.equal(tokens, 31, 'five BOS tokens and 26 characters');
    assert.equal(res.usage.prompt_tokens, 31);
  });

  test('the SDK default (base64) decodes to the same float32 numbers; token-id inputs are embedded as given', async () => {
    const floats = (await embed('vector')).data[0]!.embedding;
    const decoded = (await client.embeddings.create({ model: 'local/embed', input: 'vector' })).data[0]!.embedding;
    assert.deepEqual(decoded, floats);

    const ids = [byteToken(0x68), byteToken(0x69)];
    const res = await embed([ids]);
    assert.equal(res.data[0]!.embedding.length, EMBEDDING_WIDTH);
    assert.equal(res.usage.prompt_tokens, ids.length + (model.tokens.shouldPrependBosToken ? 1 : 0) + (model.tokens.shouldAppendEosToken ? 1 : 0));
  });

  test('bad input the engine refuses is a 400 naming the param: dimensions it cannot give, a token id outside the vocabulary, an input longer than its context', async () => {
    const refused = async (p: Promise<unknown>, param: string, message: RegExp) => {
      const err = await p.then(() => assert.fail('must be refused'), (e: unknown) => e);
      assert.ok(err instanceof OpenAI.APIError, String(err));
      assert.equal(err.status, 400);
      assert.equal((err.error as Json).param, param);
      assert.match((err.error as Json).message, message);
      return err;
    };
    await refused(embed('x', { dimensions: 8 }), 'dimensions', /have 48 numbers and cannot be shortened/);
    await refused(embed([[TINY_VOCAB_SIZE + 5]]), 'input', /token ids must be whole numbers from 0 to 259/);
    const long = await refused(embed('abcd '.repeat(100)), 'input', /embedding context holds 255 tokens per input/);
    assert.equal((long.error as Json).code, 'context_length_exceeded');
  });
});

describe('engine embedder: the embedding context is created on the first embeddings request only', { skip }, () => {
  test('no context until a request is embedded, one context for every later request', async () => {
    if (typeof engineLib === 'string') return;
    const dir = mkdtempSync(path.join(tmpdir(), 'op-local-embedder-'));
    const file = path.join(dir, 'tiny.gguf');
    writeTinyLlamaGguf(file, { embedding: 32, contextLength: 256 });
    const full = await engineLib.llama.loadModel({ modelPath: file, gpuLayers: 0 });
    try {
      const create = full.createEmbeddingContext.bind(full);
      let created = 0;
      full.createEmbeddingContext = (options) => {
        created++;
        return create(options);
      };
      const embedder = createEmbedder({ model: full, vocabularySize: TINY_VOCAB_SIZE, contextSize: 256, threads: 1, maxQueue: 4 });
      assert.equal(created, 0, 'nothing allocated at engine start');
      await assert.rejects(embedder.embed({ input: [] }, new AbortController().signal), /input: must be a non-empty/);
      assert.equal(created, 0, 'a refused request allocates nothing');
      const first = await embedder.embed({ input: ['one', 'two'], model: 'm' }, new AbortController().signal);
      const second = await embedder.embed({ input: 'one', encoding_format: 'base64' }, new AbortController().signal);
      assert.equal(created, 1);
      assert.equal(first?.data.length, 2);
      assert.equal((first?.data[0]!.embedding as number[]).length, 32);
      assert.equal(second?.data[0]!.embedding, Buffer.from(new Float32Array(first!.data[0]!.embedding as number[]).buffer).toString('base64'));
      const aborted = new AbortController();
      aborted.abort();
      assert.equal(await embedder.embed({ input: 'one' }, aborted.signal), null, 'an aborted request answers nothing');
    } finally {
      await full.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
