/**
 * Provider kind `local`: a real llama.cpp engine (node-llama-cpp) in a supervised child process,
 * serving a tiny random-weight llama model written at test time (test/helpers/tiny-gguf.ts),
 * through the gateway, with the official OpenAI SDK. The model's output is gibberish; the
 * engine, the token counts and the protocol are real.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import type { ChatHistoryItem, ChatWrapper, Llama, LlamaModel } from 'node-llama-cpp';
import { localEngineStatus, stopLocalEngines } from '../../src/providers/local/engine-supervisor.js';
import { localModelConfig } from '../../src/providers/local/local-models.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { byteToken, writeTinyLlamaGguf } from '../helpers/tiny-gguf.js';
import { keepChildLogs } from '../helpers/test-output.js';

type NodeLlamaCpp = typeof import('node-llama-cpp');

/** node-llama-cpp and its prebuilt CPU binary, or why they are not usable here. */
async function loadEngineLibrary(): Promise<{ lib: NodeLlamaCpp; llama: Llama } | string> {
  let lib: NodeLlamaCpp;
  try {
    lib = await import('node-llama-cpp');
  } catch (err) {
    return `node-llama-cpp is not installed (run npm ci): ${(err as Error).message}`;
  }
  try {
    return { lib, llama: await lib.getLlama({ gpu: false, build: 'never', progressLogs: false, logLevel: lib.LlamaLogLevel.error }) };
  } catch (err) {
    return `node-llama-cpp's prebuilt llama.cpp binary does not load on this machine: ${(err as Error).message}`;
  }
}

const engineLib = await loadEngineLibrary();
const skip = typeof engineLib === 'string' ? engineLib : false;
if (skip) process.stderr.write(`local engine tests skipped: ${skip}\n`);

/** A Hugging Face model source; the test puts the file in the cache folder first (no network here). */
const HF_SOURCE = 'hf:someone/tiny-llama-GGUF/tiny-llama.gguf';

const SUPPORTED = ['temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'stop', 'seed', 'response_format', 'tools', 'tool_choice'];

/**
 * A chat template that ends every turn with a plain newline (as many simple templates do):
 * node-llama-cpp derives the stop trigger "\n" from it, text a JSON grammar allows as whitespace.
 */
const NEWLINE_TEMPLATE =
  "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ 'User: ' + message['content'] + '\\n' }}" +
  "{% elif message['role'] == 'system' %}{{ message['content'] + '\\n' }}{% else %}{{ 'Assistant: ' + message['content'] + '\\n' }}{% endif %}" +
  "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}";

describe('local provider: llama.cpp engine through the gateway', { skip }, () => {
  let dir: string;
  let modelPath: string;
  let gw: TestGateway;
  let upstream: Upstream;
  let client: OpenAI;
  let model: LlamaModel;
  let lib: NodeLlamaCpp;
  let cachedPath: string;
  let newlinePath: string;

  before(async () => {
    if (typeof engineLib === 'string') return;
    lib = engineLib.lib;
    dir = mkdtempSync(path.join(tmpdir(), 'op-local-'));
    modelPath = path.join(dir, 'tiny-llama.gguf');
    const size = writeTinyLlamaGguf(modelPath, { contextLength: 4096 });
    newlinePath = path.join(dir, 'tiny-newline.gguf');
    writeTinyLlamaGguf(newlinePath, { contextLength: 1024, chatTemplate: NEWLINE_TEMPLATE });
    // Where node-llama-cpp keeps a downloaded hf: file (its own naming), found without a download.
    mkdirSync(path.join(dir, 'models'));
    cachedPath = await lib.resolveModelFile(HF_SOURCE, { directory: path.join(dir, 'models'), download: false, cli: false }).then(
      () => assert.fail('nothing is cached yet'),
      (err: Error) => /No model file found at "([^"]+)"/.exec(err.message)?.[1] ?? assert.fail(err.message),
    );
    copyFileSync(modelPath, cachedPath);
    assert.ok(size > 100_000 && size < 1_000_000, `a few hundred KB, got ${size}`);
    // The test's own view of the model, to count tokens the way the engine must.
    model = await engineLib.llama.loadModel({ modelPath, gpuLayers: 0, vocabOnly: true });
    upstream = await startUpstream();
    upstream.setDefault({ status: 500, json: { error: { message: 'cloud is down', type: 'server_error' } } });
    // The main model comes from OP_LOCAL_MODEL, as `npm start` would serve it with no config file.
    const fromEnv = localModelConfig({ OP_LOCAL_MODEL: modelPath, OP_LOCAL_CONTEXT_SIZE: '4096', OP_LOCAL_THREADS: '1' }) as { providers: unknown[]; models: Array<{ id: string }> };
    assert.deepEqual(fromEnv.models.map((m) => m.id), ['local/tiny-llama']);
    const endpoint = (provider: string) => ({ provider, upstream_model: modelPath, supports_text_completions: true, supported_parameters: SUPPORTED });
    gw = await startGateway({
      providers: [
        ...fromEnv.providers,
        // One sequence and a one-request queue: disconnects must free it, the queue must refuse.
        { id: 'solo', kind: 'local', local: { context_size: 4096, threads: 1, parallel_sequences: 1, max_queue: 1 } },
        // An hf: model already downloaded into the cache folder (node-llama-cpp's file naming).
        { id: 'cached', kind: 'local', local: { context_size: 1024, threads: 1, parallel_sequences: 1, cache_dir: path.join(dir, 'models') } },
        { id: 'cloud', kind: 'openai', base_url: upstream.url, api_key: 'sk-cloud' },
        { id: 'newline', kind: 'local', local: { context_size: 1024, threads: 1, parallel_sequences: 1 } },
      ],
      models: [
        ...fromEnv.models,
        { id: 'local/solo', context_length: 4096, endpoints: [endpoint('solo')] },
        { id: 'local/cached', context_length: 1024, endpoints: [{ provider: 'cached', upstream_model: HF_SOURCE, supported_parameters: SUPPORTED }] },
        { id: 'test/fallback', context_length: 4096, endpoints: [{ provider: 'cloud', upstream_model: 'gpt-cloud', supported_parameters: SUPPORTED }, endpoint('local')] },
        { id: 'local/newline', context_length: 1024, endpoints: [{ provider: 'newline', upstream_model: newlinePath, supported_parameters: [...SUPPORTED, 'logit_bias'] }] },
      ],
    });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  });

  after(async () => {
    await gw?.close();
    await stopLocalEngines();
    await upstream?.close();
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  let wrapper: ChatWrapper | undefined;
  /** Prompt tokens of a chat as the model's chat template renders it, by the model's tokenizer. */
  const chatPromptTokens = (history: ChatHistoryItem[]) => {
    wrapper ??= lib.resolveChatWrapper(model) ?? new lib.GeneralChatWrapper();
    return wrapper.generateContextState({ chatHistory: [...history, { type: 'model', response: [] }] }).contextText.tokenize(model.tokenizer).length;
  };

  const chat = (content: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}) =>
    client.chat.completions.create({ model: 'local/tiny-llama', messages: [{ role: 'user', content }], ...extra });

  test('streamed chat: tokens arrive as chunks, usage is the engine count, max_tokens cuts with length', async () => {
    const started = performance.now();
    const stream = await client.chat.completions.create({
      model: 'local/tiny-llama',
      messages: [{ role: 'system', content: 'You are tiny.' }, { role: 'user', content: 'Tell me a story.' }],
      max_tokens: 24,
      temperature: 0.8,
      seed: 11,
      stream: true,
    });
    let text = '';
    let contentChunks = 0;
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta?.content;
      if (delta) {
        text += delta;
        contentChunks++;
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.ok(text.length > 0, 'generated text');
    assert.ok(contentChunks > 1, `streamed in pieces, got ${contentChunks}`);
    assert.equal(finish, 'length');
    assert.ok(usage);
    const expectedPrompt = chatPromptTokens([{ type: 'system', text: 'You are tiny.' }, { type: 'user', text: 'Tell me a story.' }]);
    assert.equal(usage.prompt_tokens, expectedPrompt);
    assert.equal(usage.completion_tokens, 24);
    assert.equal(usage.total_tokens, expectedPrompt + 24);
    // Byte-level vocabulary: one character per token (a leading space is trimmed from chat answers).
    assert.ok(model.tokenize(text).length >= 22 && model.tokenize(text).length <= 24, JSON.stringify(text));
    process.stderr.write(`first streamed chat (engine start included): ${Math.round(performance.now() - started)} ms\n`);
  });

  test('max_tokens: completion_tokens is exactly max_tokens and finish_reason is length (chat and text completions)', async () => {
    // (Not 1: the model may start with a space, which the chat template trims: an empty answer.)
    for (const max of [3, 7, 50]) {
      const res = await chat('count', { max_tokens: max, seed: 3 });
      assert.equal(res.usage?.completion_tokens, max);
      assert.equal(res.choices[0]?.finish_reason, 'length');
      assert.equal(res.usage?.prompt_tokens, chatPromptTokens([{ type: 'user', text: 'count' }]));
    }
    const prompt = 'Once upon a time';
    const completion = await client.completions.create({ model: 'local/tiny-llama', prompt, max_tokens: 9, seed: 5 });
    assert.equal(completion.choices[0]?.finish_reason, 'length');
    assert.equal(completion.usage?.completion_tokens, 9);
    // The raw prompt, BOS first, as the engine tokenizes it.
    assert.equal(completion.usage?.prompt_tokens, 1 + model.tokenize(prompt).length);
    assert.equal(model.tokenize(completion.choices[0]!.text).length, 9);
  });

  test('text completions: completion_tokens is exactly max_tokens and the text holds at most that many tokens, over 10 calls', async () => {
    // The model favours the two bytes of "é" (C3 A9): a generation often reaches max_tokens in the
    // middle of a character. Before: the engine then sampled one more token to finish it, and
    // reported max_tokens + 1 (4 of these 10 calls), and the text held that token.
    const logit_bias = { [String(byteToken(0xc3))]: 10, [String(byteToken(0xa9))]: 10 };
    /**
     * Fewest tokens that make the text: this vocabulary has one token per byte, and each U+FFFD
     * stands for at least one byte that is no whole character.
     */
    const tokensOf = (text: string) => Buffer.byteLength(text.replaceAll('\uFFFD', '?'));
    const counts: Array<{ max: number; reported: number | undefined; inText: number }> = [];
    for (let i = 0; i < 10; i++) {
      const max = 5 + 2 * i;
      const prompt = `Story ${i}: it was`;
      const completion = await client.completions.create({ model: 'local/tiny-llama', prompt, max_tokens: max, temperature: 1, seed: 100 + i, logit_bias });
      counts.push({ max, reported: completion.usage?.completion_tokens, inText: tokensOf(completion.choices[0]!.text) });
      assert.equal(completion.choices[0]?.finish_reason, 'length');
      assert.equal(completion.usage?.prompt_tokens, 1 + model.tokenize(prompt).length);
    }
    const summary = JSON.stringify(counts);
    assert.deepEqual(counts.map((c) => c.reported), counts.map((c) => c.max), summary);
    // No token past the limit reached the text (the first byte of a character cut by the limit is dropped, as in chat).
    for (const c of counts) assert.ok(c.inText <= c.max, summary);
  });

  test('seed: the same seed gives the same output, another seed another one', async () => {
    const opts = { max_tokens: 40, temperature: 1, top_p: 0.95 };
    const a = await chat('Say something.', { ...opts, seed: 1234 });
    const b = await chat('Say something.', { ...opts, seed: 1234 });
    const c = await chat('Say something.', { ...opts, seed: 4321 });
    assert.equal(a.choices[0]?.message.content, b.choices[0]?.message.content);
    assert.notEqual(a.choices[0]?.message.content, c.choices[0]?.message.content);
    // Streamed and not streamed, same seed: same text.
    const stream = await client.chat.completions.create({ model: 'local/tiny-llama', messages: [{ role: 'user', content: 'Say something.' }], ...opts, seed: 1234, stream: true });
    let streamed = '';
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(streamed, a.choices[0]?.message.content);
  });

  test('stop: the output ends right before a stop sequence the unconstrained generation contains', async () => {
    const opts = { max_tokens: 60, temperature: 1, seed: 77 };
    const free = (await chat('Go on.', opts)).choices[0]!.message.content!;
    // A 3-character piece from the middle that does not occur earlier.
    let at = 12;
    while (at < free.length - 3 && free.indexOf(free.slice(at, at + 3)) !== at) at++;
    assert.ok(at < free.length - 3, `found a stop sequence in ${JSON.stringify(free)}`);
    const stop = free.slice(at, at + 3);
    const res = await chat('Go on.', { ...opts, stop: ['zzzzzzzz', stop] });
    assert.equal(res.choices[0]?.message.content, free.slice(0, at));
    assert.equal(res.choices[0]?.finish_reason, 'stop');
    assert.ok(res.usage!.completion_tokens >= at && res.usage!.completion_tokens < 60);
  });

  test('response_format json_schema: a grammar makes the output parse and validate', async () => {
    const schema = {
      type: 'object',
      properties: {
        color: { type: 'string', enum: ['red', 'green', 'blue'] },
        ok: { type: 'boolean' },
        size: { type: 'string', enum: ['small', 'large'] },
      },
      required: ['color', 'ok', 'size'],
      additionalProperties: false,
    };
    const validate = new Ajv().compile(schema);
    for (const seed of [1, 2, 3]) {
      const res = await chat('Describe a thing as JSON.', {
        max_tokens: 200,
        temperature: 1,
        seed,
        response_format: { type: 'json_schema', json_schema: { name: 'thing', schema, strict: true } },
      });
      const content = res.choices[0]!.message.content!;
      const parsed: unknown = JSON.parse(content);
      assert.ok(validate(parsed), `${content}: ${JSON.stringify(validate.errors)}`);
      assert.equal(res.choices[0]?.finish_reason, 'stop');
    }
  });

  test('response_format json_schema: integers and numbers follow JSON Schema (no exponent in an integer, bounds kept), 50 seeds', async () => {
    // Before: node-llama-cpp's grammar let an integer take an exponent ("293e0", "8E9",
    // "2E-265995223919020") and 16 digits, a number a 16-digit exponent, and ignored bounds.
    const schema = {
      type: 'object',
      properties: {
        count: { type: 'integer' },
        age: { type: 'integer', minimum: 18, maximum: 120 },
        delta: { type: 'integer', exclusiveMinimum: -10, exclusiveMaximum: 10 },
        score: { type: 'number' },
        ratio: { type: 'number', minimum: 0, maximum: 1 },
        maybe: { type: ['integer', 'null'], minimum: 0, maximum: 9 },
      },
      required: ['count', 'age', 'delta', 'score', 'ratio', 'maybe'],
      additionalProperties: false,
    };
    const INTEGER = /^-?(0|[1-9][0-9]*)$/;
    const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$/;
    const validate = new Ajv().compile(schema);
    const failures: string[] = [];
    for (let seed = 1; seed <= 50; seed++) {
      const res = await chat('Give the numbers as JSON.', {
        max_tokens: 300,
        temperature: 1,
        seed,
        // The model favours digits and exponent letters, as a model writing numbers does.
        logit_bias: Object.fromEntries([...'0123456789eE'].map((c) => [String(byteToken(c.charCodeAt(0))), 4])),
        response_format: { type: 'json_schema', json_schema: { name: 'numbers', schema, strict: true } },
      } as Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>);
      const content = res.choices[0]!.message.content!;
      // Each value as written (JSON.parse would accept 8E9 as the integer 8000000000).
      const raw = Object.fromEntries([...content.matchAll(/"(\w+)"\s*:\s*([^,}\s]+)/g)].map((m) => [m[1]!, m[2]!]));
      const parsed = JSON.parse(content) as Record<string, number | null>;
      const problems = [
        ...['count', 'age', 'delta'].filter((k) => !INTEGER.test(raw[k] ?? '') || !Number.isSafeInteger(parsed[k])),
        ...['score', 'ratio'].filter((k) => !NUMBER.test(raw[k] ?? '') || !Number.isFinite(parsed[k])),
        ...(raw.maybe === 'null' || (INTEGER.test(raw.maybe ?? '') && Number.isSafeInteger(parsed.maybe)) ? [] : ['maybe']),
        ...(validate(parsed) ? [] : [JSON.stringify(validate.errors)]),
      ];
      if (problems.length > 0) failures.push(`seed ${seed}: ${problems.join(', ')} in ${content}`);
    }
    assert.deepEqual(failures, []);
  });

  test('response_format under a template that ends turns with a newline: the output ends only where the grammar allows', async () => {
    // Before: a newline right after "{" (allowed JSON whitespace) fired the template's stop
    // trigger: the answer was "{" with finish_reason "stop".
    const schema = {
      type: 'object',
      properties: {
        color: { type: 'string', enum: ['red', 'green', 'blue'] },
        ok: { type: 'boolean' },
        tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } },
        note: { type: 'string', maxLength: 12 },
      },
      required: ['color', 'ok', 'tags', 'note'],
      additionalProperties: false,
    };
    const validate = new Ajv().compile(schema);
    const formats = [
      { type: 'json_schema', json_schema: { name: 'thing', schema, strict: true } },
      { type: 'json_object' },
    ] as const;
    const finishes: Record<string, number> = {};
    let withNewline = 0;
    for (const response_format of formats) {
      for (const seed of [1, 2, 3, 4, 5, 6]) {
        const res = await client.chat.completions.create({
          model: 'local/newline',
          messages: [{ role: 'user', content: 'Describe a thing as JSON.' }],
          max_tokens: 120,
          temperature: 1,
          seed,
          // The model favours newlines, as real models do in JSON ("{\n  ...").
          logit_bias: { [String(byteToken(0x0a))]: 5 },
          response_format,
        } as OpenAI.ChatCompletionCreateParamsNonStreaming);
        const choice = res.choices[0]!;
        const content = choice.message.content ?? '';
        const key = `${response_format.type}:${choice.finish_reason}`;
        finishes[key] = (finishes[key] ?? 0) + 1;
        if (content.includes('\n')) withNewline++;
        if (choice.finish_reason === 'length') continue;
        assert.equal(choice.finish_reason, 'stop', JSON.stringify(content));
        const parsed: unknown = JSON.parse(content);
        if (response_format.type === 'json_schema') assert.ok(validate(parsed), `${content}: ${JSON.stringify(validate.errors)}`);
        else assert.equal(typeof parsed, 'object');
      }
    }
    assert.ok(withNewline >= 4, `newlines inside the JSON (the trigger text) in ${withNewline} of 12 answers`);
    assert.equal(finishes['json_schema:stop'], 6, JSON.stringify(finishes));
  });

  test('tools: the function definitions reach the chat template (best effort: this model never calls them)', async () => {
    const plain = await chat('Weather in Paris?', { max_tokens: 5, seed: 1 });
    const withTools = await chat('Weather in Paris?', {
      max_tokens: 5,
      seed: 1,
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Current weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
    });
    assert.ok(withTools.usage!.prompt_tokens > plain.usage!.prompt_tokens + 100, 'the tool documentation is in the prompt');
    assert.ok(['length', 'tool_calls'].includes(withTools.choices[0]!.finish_reason));
  });

  test('a prompt longer than the context (in the model\'s own tokens) is context_length_exceeded', async () => {
    // ~1 token per character for this byte-level vocabulary: 5000 characters do not fit 4096.
    const err = await chat('abcd '.repeat(1000), { max_tokens: 5 }).then(
      () => assert.fail('must be refused'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 400);
    assert.equal((err.error as { code?: string }).code, 'context_length_exceeded');
    assert.match((err.error as { message: string }).message, /maximum context length is 4096 tokens/);
  });

  test('an hf: model source already in the cache folder is served with no download', async () => {
    const res = await client.chat.completions.create({ model: 'local/cached', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, seed: 1 });
    assert.equal(res.usage?.completion_tokens, 4);
    const status = localEngineStatus().find((s) => s.providerId === 'cached');
    assert.equal(status?.info?.modelPath, cachedPath);
    assert.equal(status?.info?.contextSize, 1024);
  });

  test('fallback: a failing openai endpoint (HTTP 500) fails over to the local engine for the same model', async () => {
    const before = upstream.requests.length;
    const { data, response } = await client.chat.completions
      .create({ model: 'test/fallback', messages: [{ role: 'user', content: 'hello?' }], max_tokens: 6, seed: 9, provider: { order: ['cloud', 'local'] } } as OpenAI.ChatCompletionCreateParamsNonStreaming)
      .withResponse();
    assert.equal(upstream.requests.length, before + 1, 'the cloud endpoint was tried first');
    assert.equal(data.usage?.completion_tokens, 6);
    const id = response.headers.get('x-op-generation-id');
    const record = (await (await fetch(`${gw.baseURL}/generation?id=${id}`, { headers: { authorization: `Bearer ${gw.adminKey}` } })).json()) as {
      data: { provider_name: string; provider_responses: Array<{ provider: string; error_code: string | null }> };
    };
    assert.equal(record.data.provider_name, 'local');
    assert.deepEqual(record.data.provider_responses.map((a) => [a.provider, a.error_code]), [['cloud', 'upstream_error'], ['local', null]]);
  });

  test('disconnect mid-stream frees the sequence: the next request is served at once; a full queue is a retryable 503', async () => {
    const solo = (content: string, max: number, signal?: AbortSignal) =>
      client.chat.completions.create({ model: 'local/solo', messages: [{ role: 'user', content }], max_tokens: max, temperature: 1, seed: 5, stream: true }, { signal });
    // Warm the engine (its first start would dominate the timings below).
    for await (const _ of await solo('warm up', 2)) void _;

    // A generation of 4000 tokens would keep the only sequence busy for seconds.
    const long = new AbortController();
    const stream = await solo('A very long story, please.', 4000, long.signal);
    let chunks = 0;
    let stopReading = false;
    const reading = (async () => {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta?.content) chunks++;
        if (stopReading) break; // closes the stream: the gateway aborts the engine request
      }
    })();
    while (chunks < 3) await sleep(5);
    // While it runs: one request may wait in the queue, the next is refused with a retryable 503.
    const queued = solo('queued', 3).then(async (s) => {
      let text = '';
      for await (const c of s) text += c.choices[0]?.delta?.content ?? '';
      return text;
    });
    await sleep(100);
    const refused = await solo('refused', 3).then(
      () => assert.fail('a full queue must refuse'),
      (err: unknown) => err,
    );
    assert.ok(refused instanceof OpenAI.APIError, String(refused));
    assert.equal(refused.status, 503);
    assert.equal((refused.error as { code?: string }).code, 'upstream_overloaded');
    assert.equal((refused.error as { kind?: string }).kind, 'retryable');

    stopReading = true;
    await reading;
    assert.ok(chunks < 4000, 'the long generation was still running');
    assert.ok((await queued).length > 0, 'the queued request ran once the sequence was free');

    const started = performance.now();
    const next = await solo('next', 5);
    let firstTokenMs: number | null = null;
    for await (const chunk of next) if (firstTokenMs === null && chunk.choices[0]?.delta?.content) firstTokenMs = performance.now() - started;
    assert.ok(firstTokenMs !== null && firstTokenMs < 2000, `first token after ${firstTokenMs} ms`);

    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').select(['status', 'completion_tokens']).where('endpoint', 'like', 'solo/%').where('status', '=', 'cancelled').execute();
    assert.equal(rows.length, 1, 'the disconnected generation is recorded as cancelled');
  });

  test('a crashed engine: the next request is a retryable error or served after the restart; the gateway keeps serving', async () => {
    await chat('alive?', { max_tokens: 2 });
    const before = localEngineStatus().find((s) => s.providerId === 'local');
    assert.equal(before?.state, 'ready');
    process.kill(before!.pid!, 'SIGKILL');
    while (localEngineStatus().find((s) => s.providerId === 'local')?.state === 'ready') await sleep(10);

    // Right after the crash: a retryable error (engine restarting), or already served.
    const first = await chat('are you back?', { max_tokens: 3 }).then(
      (res) => ({ ok: true as const, res }),
      (err: unknown) => ({ ok: false as const, err }),
    );
    if (!first.ok) {
      assert.ok(first.err instanceof OpenAI.APIError, String(first.err));
      assert.equal((first.err.error as { kind?: string }).kind, 'retryable', JSON.stringify(first.err.error));
    }
    // The gateway itself never went down.
    assert.equal((await fetch(`${gw.origin}/health`)).status, 200);

    const deadline = performance.now() + 30_000;
    let served: OpenAI.ChatCompletion | null = first.ok ? first.res : null;
    while (!served && performance.now() < deadline) {
      served = await chat('are you back?', { max_tokens: 3 }).catch(() => null);
      if (!served) await sleep(200);
    }
    assert.ok(served, 'served again after the restart');
    assert.equal(served.usage?.completion_tokens, 3);
    const after = localEngineStatus().find((s) => s.providerId === 'local');
    assert.equal(after?.state, 'ready');
    assert.notEqual(after?.pid, before!.pid);
    assert.ok(after!.failures >= 1);
  });
});

const CLI = new URL('../../dist/src/cli.js', import.meta.url).pathname;

describe('OP_LOCAL_MODEL through the CLI', { skip: skip || (existsSync(CLI) ? false : 'dist/src/cli.js is missing: run npm run build') }, () => {
  test('the catalog reports the context the engine really runs: OP_LOCAL_CONTEXT_SIZE capped at the model\'s trained context', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'op-local-cli-'));
    // Trained with 1024 tokens of context; OP_LOCAL_CONTEXT_SIZE asks for the default 4096.
    writeTinyLlamaGguf(path.join(dir, 'short.gguf'), { contextLength: 1024 });
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = srv.address() as AddressInfo;
        srv.close(() => resolve(p));
      });
    });
    const env: NodeJS.ProcessEnv = {
      ...process.env, OP_CONFIG: undefined, OP_LOCAL_CONTEXT_SIZE: undefined,
      OP_LOCAL_MODEL: 'short.gguf', OP_LOCAL_THREADS: '1', OP_LOCAL_PARALLEL: '1',
      OP_PORT: String(port), OP_HOST: '127.0.0.1', OP_ADMIN_KEY: 'adm', OP_DATABASE_URL: `sqlite:${path.join(dir, 'op.db')}`,
    };
    const child: ChildProcess = spawn(process.execPath, [CLI, 'serve'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    keepChildLogs(child, 'serve-local');
    let logs = '';
    child.stdout!.on('data', (d) => (logs += d));
    child.stderr!.on('data', (d) => (logs += d));
    const contextLength = async () => {
      const res = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: 'Bearer adm' } }).catch(() => null);
      if (!res?.ok) return null;
      return ((await res.json()) as { data: Array<{ id: string; context_length: number }> }).data.find((m) => m.id === 'local/short')?.context_length ?? null;
    };
    try {
      const deadline = performance.now() + 60_000;
      let seen = await contextLength();
      while (seen !== 1024 && performance.now() < deadline && child.exitCode === null) {
        await sleep(100);
        seen = await contextLength();
      }
      assert.equal(seen, 1024, logs);
      const ready = /"contextSize":(\d+)/.exec(logs);
      assert.equal(ready?.[1], '1024', 'the engine reported the context it runs');
      // The log line is written after the catalog changes, and may reach the pipe a little later.
      const logged = /OP_LOCAL_MODEL: context_length set to what the engine runs/;
      for (let i = 0; i < 100 && !logged.test(logs); i++) await sleep(50);
      assert.match(logs, logged);
      // The router now refuses what the engine could not hold, before any engine call.
      const err = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer adm', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'local/short', messages: [{ role: 'user', content: 'abcd '.repeat(400) }], max_tokens: 5 }),
      });
      assert.equal(err.status, 400);
      assert.equal(((await err.json()) as { error: { code: string } }).error.code, 'context_length_exceeded');
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(null)));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
