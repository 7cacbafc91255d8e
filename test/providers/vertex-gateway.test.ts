/**
 * Provider kind `vertex` end to end, offline: the fake Vertex AI of test/helpers/vertex-fake.ts
 * (bearer checked against the tokens its own metadata server and STS issued) behind the gateway,
 * reached with the official SDKs.
 *
 * - cross-check: `@anthropic-ai/vertex-sdk` with an `external_account` credential (token from the
 *   fake STS) is accepted by the same fake, and a wrong bearer gets Google's 401 body;
 * - Gemini on Vertex (publisher `google`, credential: an `external_account` key_file): the openai
 *   SDK's chat, stream (the recorded Vertex stream of streamed function-call arguments), tools,
 *   Responses and legacy completions (translated); embeddings through `:predict`;
 * - Claude on Vertex (publisher `anthropic`, credential: ADC → the fake metadata server through
 *   GCE_METADATA_HOST, endpoint location override): the Anthropic SDK on /v1/messages through
 *   the pass-through lane (a thinking signature intact across two turns, betas in the header),
 *   the openai SDK (chat, stream, Responses) translated to `rawPredict`, count_tokens, and a
 *   throttled `anthropic` endpoint failing over to the Vertex one within a Messages request;
 * - token refresh with a short `expires_in` (a new token per call, no failed request) and the
 *   cache with a long one; an STS that refuses: `upstream_auth_failed`, failing over to the next
 *   endpoint within the request; a 429 RESOURCE_EXHAUSTED failing over.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
import { GoogleAuth } from 'google-auth-library';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { lastGeneration } from '../helpers/generation-record.js';
import { fixturesAvailable, loadChunks, startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startVertexFake, UNAUTHENTICATED, type VertexFake } from '../helpers/vertex-fake.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const SUPPORTED = ['temperature', 'max_tokens', 'max_completion_tokens', 'tools', 'tool_choice', 'reasoning'];
const RECORDED = 'google/google-vertex-stream-tool-call-arguments-nested.1.chunks.txt';

let fake: VertexFake;
let gw: TestGateway;
let openai: OpenAI;
let anthropic: Anthropic;
let keyFile: string;
let direct: Upstream;

before(async () => {
  fake = await startVertexFake();
  // ADC of this process: no env file, no gcloud file, the metadata server at the fake.
  delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
  process.env.CLOUDSDK_CONFIG = mkdtempSync(path.join(tmpdir(), 'op-gcloud-'));
  process.env.GCE_METADATA_HOST = fake.hostPort;
  process.env.METADATA_SERVER_DETECTION = 'assume-present';
  keyFile = fake.externalAccountFile();
  direct = await startUpstream();
  const failing = fake.externalAccountFile().replace('external-account.json', 'missing.json');
  gw = await startGateway({
    providers: [
      { id: 'vx-gemini', kind: 'vertex', base_url: fake.origin, vertex: { project: 'proj-1', key_file: keyFile, quota_project: 'billing-proj' } },
      { id: 'vx-claude', kind: 'vertex', base_url: fake.origin, vertex: { project: 'proj-1', location: 'global', publisher: 'anthropic' } },
      { id: 'vx-nocred', kind: 'vertex', base_url: fake.origin, vertex: { project: 'proj-1', key_file: failing } },
      { id: 'anthropic-direct', kind: 'anthropic', base_url: direct.url, api_key: 'sk-ant-direct-secret' },
      { id: 'vx-refresh', kind: 'vertex', base_url: fake.origin, vertex: { project: 'proj-1', key_file: fake.externalAccountFile() } },
      { id: 'vx-refused', kind: 'vertex', base_url: fake.origin, vertex: { project: 'proj-1', key_file: fake.externalAccountFile() } },
      { id: 'vx-otherproj', kind: 'vertex', base_url: fake.origin, vertex: { project: 'proj-2', key_file: keyFile } },
    ],
    models: [
      { id: 'google/gemini-2.5-flash', context_length: 100_000, endpoints: [{ provider: 'vx-gemini', upstream_model: 'gemini-2.5-flash', supported_parameters: SUPPORTED }] },
      {
        id: 'google/gemini-failover',
        context_length: 100_000,
        endpoints: [
          { provider: 'vx-nocred', upstream_model: 'gemini-2.5-flash-lite', supported_parameters: SUPPORTED },
          { provider: 'vx-gemini', upstream_model: 'gemini-2.5-pro', supported_parameters: SUPPORTED },
        ],
      },
      {
        id: 'google/gemini-two',
        context_length: 100_000,
        endpoints: [
          { provider: 'vx-gemini', upstream_model: 'gemini-a', supported_parameters: SUPPORTED },
          { provider: 'vx-gemini', upstream_model: 'gemini-b', supported_parameters: SUPPORTED },
        ],
      },
      { id: 'google/gemini-nocred', context_length: 100_000, endpoints: [{ provider: 'vx-nocred', upstream_model: 'gemini-2.5-flash', supported_parameters: SUPPORTED }] },
      { id: 'google/gemini-refresh', context_length: 100_000, endpoints: [{ provider: 'vx-refresh', upstream_model: 'gemini-2.5-flash', supported_parameters: SUPPORTED }] },
      { id: 'google/gemini-refused', context_length: 100_000, endpoints: [{ provider: 'vx-refused', upstream_model: 'gemini-2.5-flash', supported_parameters: SUPPORTED }] },
      { id: 'google/gemini-otherproj', context_length: 100_000, endpoints: [{ provider: 'vx-otherproj', upstream_model: 'gemini-2.5-flash', supported_parameters: SUPPORTED }] },
      { id: 'google/text-embedding-005', context_length: 2048, endpoints: [{ provider: 'vx-gemini', upstream_model: 'text-embedding-005', embeddings: true, vertex: { location: 'us-central1' } }] },
      {
        id: 'anthropic/claude-mixed',
        context_length: 200_000,
        endpoints: [
          { provider: 'anthropic-direct', upstream_model: 'claude-sonnet-4-5-20250929', supported_parameters: SUPPORTED },
          { provider: 'vx-claude', upstream_model: 'claude-sonnet-4-5@20250929', supported_parameters: SUPPORTED, vertex: { location: 'us-east5' } },
        ],
      },
      {
        id: 'anthropic/claude-sonnet-4.5',
        context_length: 200_000,
        endpoints: [{ provider: 'vx-claude', upstream_model: 'claude-sonnet-4-5@20250929', supported_parameters: SUPPORTED, vertex: { location: 'us-east5' } }],
      },
    ],
  }, { random: () => 0 }); // weighted-random routing picks the first listed endpoint first
  openai = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: gw.origin, apiKey: gw.adminKey, maxRetries: 0 });
});

after(async () => {
  await gw.close();
  await fake.close();
  await direct.close();
});

const lastCall = () => fake.calls.at(-1)!;
const bearerOf = (h: Json) => String(h.authorization).replace(/^Bearer /, '');

const lastRecord = () => lastGeneration(gw);

describe('the fake against the official SDK (cross-check)', () => {
  test('@anthropic-ai/vertex-sdk with an external_account credential is accepted: path, bearer from the fake STS, betas in the header', async () => {
    const client = new AnthropicVertex({
      baseURL: `${fake.origin}/v1`,
      region: 'us-east5',
      projectId: 'proj-1',
      googleAuth: new GoogleAuth({ scopes: 'https://www.googleapis.com/auth/cloud-platform', keyFilename: keyFile }),
      maxRetries: 0,
    });
    const msg = await client.messages.create(
      { model: 'claude-sonnet-4-5@20250929', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } },
    );
    assert.equal(msg.content[0]?.type === 'text' ? msg.content[0].text : '', 'Hello from Claude on Vertex.');
    const call = lastCall();
    assert.equal(call.path, '/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict');
    assert.equal('model' in call.body, false);
    assert.equal(typeof call.body.anthropic_version, 'string');
    assert.equal(call.headers['anthropic-beta'], 'interleaved-thinking-2025-05-14');
    const issued = fake.issued.find((t) => t.token === bearerOf(call.headers));
    assert.equal(issued?.source, 'sts');
  });

  test('a bearer the fake did not issue gets Google\'s 401 UNAUTHENTICATED body', async () => {
    const res = await fetch(`${fake.origin}/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict`, {
      method: 'POST',
      headers: { authorization: 'Bearer ya29.not-issued-here', 'content-type': 'application/json' },
      body: JSON.stringify({ anthropic_version: 'vertex-2023-10-16', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), UNAUTHENTICATED);
  });

  test('a Claude body with `model` or without anthropic_version gets the Anthropic envelope 400', async () => {
    const token = fake.issued.at(-1)!.token;
    const post = (body: Json) =>
      fetch(`${fake.origin}/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const noVersion = await post({ max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(noVersion.status, 400);
    assert.deepEqual(await noVersion.json(), { type: 'error', error: { type: 'invalid_request_error', message: 'anthropic_version: Field required' } });
    const withModel = await post({ anthropic_version: 'vertex-2023-10-16', model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(withModel.status, 400);
    assert.equal(((await withModel.json()) as Json).error.message, 'model: Extra inputs are not permitted');
  });
});

describe('Gemini on Vertex through the gateway (openai SDK)', () => {
  test('chat: generateContent at the global host path, bearer from the key file\'s STS, quota project, roles on every content', async () => {
    const before = fake.calls.length;
    const res = await openai.chat.completions.create({
      model: 'google/gemini-2.5-flash',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'Hello.' },
        { role: 'user', content: 'again' },
      ],
      temperature: 0.3,
    });
    assert.equal(res.choices[0]?.message.content, 'Hello from Gemini on Vertex.');
    assert.equal(res.choices[0]?.finish_reason, 'stop');
    assert.equal(res.usage?.prompt_tokens, 7);
    assert.equal(res.usage?.completion_tokens, 6);
    assert.equal(fake.calls.length, before + 1);
    const call = lastCall();
    assert.equal(call.path, '/v1/projects/proj-1/locations/global/publishers/google/models/gemini-2.5-flash:generateContent');
    assert.equal(fake.issued.find((t) => t.token === bearerOf(call.headers))?.source, 'sts');
    assert.equal(call.headers['x-goog-user-project'], 'billing-proj');
    assert.equal(call.headers['x-goog-api-key'], undefined);
    assert.deepEqual(call.body.contents.map((c: Json) => c.role), ['user', 'model', 'user']);
    assert.deepEqual(call.body.systemInstruction, { parts: [{ text: 'Be brief.' }] });
    assert.equal(call.body.generationConfig.temperature, 0.3);
  });

  test('stream: the recorded Vertex stream (streamed function-call arguments) reaches the openai SDK as one tool call', { skip: fixturesAvailable() ? false : 'recordings absent' }, async () => {
    const chunks = loadChunks(RECORDED);
    fake.reply({ sse: chunks, framing: 'gemini' });
    const stream = await openai.chat.completions.create({
      model: 'google/gemini-2.5-flash',
      messages: [{ role: 'user', content: 'cook' }],
      tools: [{ type: 'function', function: { name: 'cookRecipe', parameters: { type: 'object', properties: { recipe: { type: 'object' } } } } }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let name = '';
    let args = '';
    let finish: string | null = null;
    let usage: Json | undefined;
    for await (const chunk of stream) {
      for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) {
        name += tc.function?.name ?? '';
        args += tc.function?.arguments ?? '';
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    const call = lastCall();
    assert.equal(call.path, '/v1/projects/proj-1/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent');
    assert.equal(call.query.get('alt'), 'sse');
    assert.equal(name, 'cookRecipe');
    const parsed = JSON.parse(args) as Json;
    // The recording streams a recipe with ten steps (the last partialArgs path is $.recipe.steps[9]).
    assert.equal(Array.isArray(parsed.recipe.steps), true);
    assert.equal(parsed.recipe.steps.length, 10);
    assert.equal(finish, 'tool_calls');
    const last = JSON.parse(chunks.at(-1)!) as Json;
    assert.equal(usage?.prompt_tokens, last.usageMetadata.promptTokenCount);
    assert.equal(usage?.completion_tokens, last.usageMetadata.candidatesTokenCount + last.usageMetadata.thoughtsTokenCount);
  });

  test('tools: functionDeclarations and toolConfig sent; a functionCall comes back as tool_calls', async () => {
    fake.reply({
      json: {
        candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 5, totalTokenCount: 25 },
      },
    });
    const res = await openai.chat.completions.create({
      model: 'google/gemini-2.5-flash',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
      tool_choice: 'required',
    });
    const tc = res.choices[0]?.message.tool_calls?.[0];
    assert.equal(tc?.type === 'function' ? tc.function.name : '', 'get_weather');
    assert.deepEqual(JSON.parse(tc?.type === 'function' ? tc.function.arguments : '{}'), { city: 'Paris' });
    assert.equal(res.choices[0]?.finish_reason, 'tool_calls');
    const body = lastCall().body;
    assert.equal(body.tools[0].functionDeclarations[0].name, 'get_weather');
    assert.deepEqual(body.toolConfig, { functionCallingConfig: { mode: 'ANY' } });
  });

  test('Responses API and legacy completions: translated to generateContent', async () => {
    const r = await openai.responses.create({ model: 'google/gemini-2.5-flash', input: 'hi', instructions: 'Be brief.' });
    assert.equal(r.output_text, 'Hello from Gemini on Vertex.');
    assert.equal(r.usage?.input_tokens, 7);
    let call = lastCall();
    assert.equal(call.method, 'generateContent');
    assert.deepEqual(call.body.systemInstruction, { parts: [{ text: 'Be brief.' }] });
    assert.deepEqual(call.body.contents, [{ role: 'user', parts: [{ text: 'hi' }] }]);
    const c = await openai.completions.create({ model: 'google/gemini-2.5-flash', prompt: 'Say hello' });
    assert.equal(c.choices[0]?.text, 'Hello from Gemini on Vertex.');
    call = lastCall();
    assert.deepEqual(call.body.contents, [{ role: 'user', parts: [{ text: 'Say hello' }] }]);
  });

  test('embeddings: :predict at the endpoint\'s location, one instance per input, usage from statistics.token_count', async () => {
    const res = await openai.embeddings.create({ model: 'google/text-embedding-005', input: ['one two three', 'four five'], dimensions: 4 });
    const call = lastCall();
    assert.equal(call.path, '/v1/projects/proj-1/locations/us-central1/publishers/google/models/text-embedding-005:predict');
    assert.deepEqual(call.body, { instances: [{ content: 'one two three' }, { content: 'four five' }], parameters: { outputDimensionality: 4 } });
    assert.equal(res.data.length, 2);
    assert.deepEqual(res.data[0]?.embedding.map((v) => Number(v.toFixed(4))), [0.1, 0.11, 0.12, 0.13]);
    assert.deepEqual(res.data[1]?.embedding.map((v) => Number(v.toFixed(4))), [0.2, 0.21, 0.22, 0.23]);
    assert.equal(res.usage.prompt_tokens, 5);
  });

  test('a project the credential may not use: Google\'s 403 PERMISSION_DENIED is upstream_auth_failed with the message', async () => {
    const err = await openai.chat.completions.create({ model: 'google/gemini-otherproj', messages: [{ role: 'user', content: 'hi' }] }).then(
      () => assert.fail('expected an error'),
      (e: Json) => e,
    );
    assert.equal(err.status, 502);
    assert.equal(err.code, 'upstream_auth_failed');
    assert.match(String(err.message), /Permission 'aiplatform\.endpoints\.predict' denied on resource/);
  });

  test('429 RESOURCE_EXHAUSTED on the first endpoint fails over to the next within the request', async () => {
    fake.reply({ status: 429, json: { error: { code: 429, message: 'Resource exhausted. Please try again later.', status: 'RESOURCE_EXHAUSTED' } } });
    const before = fake.calls.length;
    const res = await openai.chat.completions.create({ model: 'google/gemini-two', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.choices[0]?.message.content, 'Hello from Gemini on Vertex.');
    assert.deepEqual(fake.calls.slice(before).map((c) => c.model), ['gemini-a', 'gemini-b']);
  });

  test('a content without role would be refused by the fake with Vertex\'s own 400 (the gateway never sends one)', async () => {
    const token = fake.issued.at(-1)!.token;
    const res = await fetch(`${fake.origin}/v1/projects/proj-1/locations/global/publishers/google/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }),
    });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: { code: 400, message: 'Please use a valid role: user, model.', status: 'INVALID_ARGUMENT' } });
  });
});

describe('Google credentials', () => {
  test('a short expires_in: the library fetches a new token for each call, and no request fails', async () => {
    fake.tokenLifetimeSeconds = 2; // inside the library's 5-minute eager refresh window: refreshed on every call
    try {
      const stsBefore = fake.issued.filter((t) => t.source === 'sts').length;
      const seen: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await openai.chat.completions.create({ model: 'google/gemini-refresh', messages: [{ role: 'user', content: `hi ${i}` }] });
        assert.equal(res.choices[0]?.message.content, 'Hello from Gemini on Vertex.');
        seen.push(bearerOf(lastCall().headers));
      }
      const sts = fake.issued.filter((t) => t.source === 'sts');
      assert.equal(sts.length, stsBefore + 3);
      assert.deepEqual(seen, sts.slice(-3).map((t) => t.token));
      assert.equal(new Set(seen).size, 3);
    } finally {
      fake.tokenLifetimeSeconds = 3600;
    }
  });

  test('a long expires_in: the cached token serves every call, one exchange', async () => {
    await openai.chat.completions.create({ model: 'google/gemini-2.5-flash', messages: [{ role: 'user', content: 'prime' }] });
    const stsBefore = fake.issued.filter((t) => t.source === 'sts').length;
    const tokens = new Set<string>();
    for (let i = 0; i < 3; i++) {
      await openai.chat.completions.create({ model: 'google/gemini-2.5-flash', messages: [{ role: 'user', content: `hi ${i}` }] });
      tokens.add(bearerOf(lastCall().headers));
    }
    assert.equal(fake.issued.filter((t) => t.source === 'sts').length, stsBefore);
    assert.equal(tokens.size, 1);
  });

  test('no token (the key file is missing): the attempt fails over to the next endpoint within the request', async () => {
    const res = await openai.chat.completions.create({ model: 'google/gemini-failover', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.choices[0]?.message.content, 'Hello from Gemini on Vertex.');
    assert.equal(lastCall().model, 'gemini-2.5-pro');
    const record = await lastRecord();
    assert.equal(record.provider, 'vx-gemini');
    const attempts = record.detail.attempts as Json[];
    assert.equal(attempts.length, 2);
    assert.equal(attempts[0]?.error_code, 'upstream_auth_failed');
    assert.equal(attempts[0]?.status, null);
  });

  test('no token and no other endpoint: 502 upstream_auth_failed naming the source', async () => {
    const err = await openai.chat.completions.create({ model: 'google/gemini-nocred', messages: [{ role: 'user', content: 'hi' }] }).then(
      () => assert.fail('expected an error'),
      (e: Json) => e,
    );
    assert.equal(err.status, 502);
    assert.equal(err.code, 'upstream_auth_failed');
    assert.match(String(err.message), /could not obtain a Google access token from key_file \S+missing\.json/);
  });

  test('an STS that refuses the exchange: upstream_auth_failed naming the key file, no token in the message', async () => {
    fake.failSts(true);
    try {
      const failures = fake.stsFailures;
      const err = await openai.chat.completions.create({ model: 'google/gemini-refused', messages: [{ role: 'user', content: 'hi' }] }).then(
        () => assert.fail('expected an error'),
        (e: Json) => e,
      );
      assert.equal(err.status, 502);
      assert.equal(err.code, 'upstream_auth_failed');
      assert.match(String(err.message), /could not obtain a Google access token from key_file \S+external-account\.json: .*invalid_grant/);
      assert.doesNotMatch(String(err.message), /ya29\./);
      assert.ok(fake.stsFailures > failures);
    } finally {
      fake.failSts(false);
    }
  });
});

describe('Claude on Vertex through the gateway', () => {
  test('Anthropic SDK on /v1/messages: the pass-through lane to :streamRawPredict; the thinking signature survives two turns', async () => {
    const signature = 'EqQBCkYIBxABGAIiQL0vRTeXr1Y0f4Zk+Signature==';
    fake.reply({
      framing: 'anthropic',
      sse: [
        { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 30, output_tokens: 1 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Two plus two is four.' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature } },
        { type: 'content_block_stop', index: 0 },
        { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: '4' } },
        { type: 'content_block_stop', index: 1 },
        { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 12 } },
        { type: 'message_stop' },
      ].map((e) => JSON.stringify(e)),
    });
    const first = await anthropic.messages
      .stream(
        { model: 'anthropic/claude-sonnet-4.5', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: '2+2?' }] },
        { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } },
      )
      .finalMessage();
    const thinking = first.content.find((b) => b.type === 'thinking');
    assert.equal(thinking?.type === 'thinking' ? thinking.signature : '', signature);
    let call = lastCall();
    assert.equal(call.path, '/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict');
    assert.equal(call.body.anthropic_version, 'vertex-2023-10-16');
    assert.equal('model' in call.body, false);
    assert.equal(call.body.stream, true);
    assert.equal(call.headers['anthropic-beta'], 'interleaved-thinking-2025-05-14');
    assert.equal(call.headers['anthropic-version'], undefined);
    assert.equal(fake.issued.find((t) => t.token === bearerOf(call.headers))?.source, 'metadata');

    const second = await anthropic.messages.create({
      model: 'anthropic/claude-sonnet-4.5',
      max_tokens: 2048,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [
        { role: 'user', content: '2+2?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: 'And 3+3?' },
      ],
    });
    assert.equal(second.content[0]?.type === 'text' ? second.content[0].text : '', 'Hello from Claude on Vertex.');
    call = lastCall();
    assert.equal(call.method, 'rawPredict');
    assert.deepEqual(call.body.messages[1].content[0], { type: 'thinking', thinking: 'Two plus two is four.', signature });
    assert.equal(call.body.anthropic_version, 'vertex-2023-10-16');
  });

  test('openai SDK to a Claude endpoint: translated to a Messages body at :rawPredict', async () => {
    const res = await openai.chat.completions.create({ model: 'anthropic/claude-sonnet-4.5', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }], max_tokens: 100 });
    assert.equal(res.choices[0]?.message.content, 'Hello from Claude on Vertex.');
    assert.equal(res.usage?.prompt_tokens, 11);
    assert.equal(res.usage?.completion_tokens, 7);
    const call = lastCall();
    assert.equal(call.path, '/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict');
    assert.equal(call.body.anthropic_version, 'vertex-2023-10-16');
    assert.equal(call.body.max_tokens, 100);
    assert.equal('model' in call.body, false);
    assert.deepEqual(call.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
  });

  test('openai SDK stream to a Claude endpoint: :streamRawPredict events become chunks', async () => {
    const stream = await openai.chat.completions.create({ model: 'anthropic/claude-sonnet-4.5', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'Hello from Claude on Vertex.');
    assert.equal(lastCall().method, 'streamRawPredict');
  });

  test('Responses API to a Claude endpoint: translated to a Messages body at :rawPredict', async () => {
    const r = await openai.responses.create({ model: 'anthropic/claude-sonnet-4.5', input: 'hi', max_output_tokens: 64 });
    assert.equal(r.output_text, 'Hello from Claude on Vertex.');
    const call = lastCall();
    assert.equal(call.method, 'rawPredict');
    assert.equal(call.body.anthropic_version, 'vertex-2023-10-16');
    assert.equal(call.body.max_tokens, 64);
  });

  test('a Google-envelope 429 from the front end on a Claude method reaches the Anthropic SDK as a rate limit', async () => {
    fake.reply({ status: 429, json: { error: { code: 429, message: 'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model.', status: 'RESOURCE_EXHAUSTED' } } });
    await assert.rejects(anthropic.messages.create({ model: 'anthropic/claude-sonnet-4.5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }), (err: Json) => {
      assert.equal(err.status, 429);
      assert.equal(err.error?.error?.type, 'rate_limit_error');
      assert.match(String(err.error?.error?.message), /Quota exceeded for aiplatform\.googleapis\.com/);
      return true;
    });
  });

  test('a throttled Anthropic endpoint fails over to the Vertex one within a /v1/messages request, each in its own pass-through lane', async () => {
    direct.enqueue({ status: 429, json: { type: 'error', error: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' } } });
    const before = fake.calls.length;
    const msg = await anthropic.messages.create({ model: 'anthropic/claude-mixed', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(msg.content[0]?.type === 'text' ? msg.content[0].text : '', 'Hello from Claude on Vertex.');
    const first = JSON.parse(direct.requests.at(-1)!.body) as Json;
    assert.equal(first.model, 'claude-sonnet-4-5-20250929');
    assert.equal('anthropic_version' in first, false);
    assert.equal(fake.calls.length, before + 1);
    const call = lastCall();
    assert.equal(call.path, '/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict');
    assert.equal('model' in call.body, false);
    assert.equal(call.headers['x-api-key'], undefined);
    const record = await lastRecord();
    assert.equal(record.provider, 'vx-claude');
    const attempts = record.detail.attempts as Json[];
    assert.deepEqual(attempts.map((a) => [a.provider, a.status, a.error_code]), [['anthropic-direct', 429, 'upstream_rate_limited'], ['vx-claude', 200, null]]);
  });

  test('count_tokens: count-tokens:rawPredict with the bare model name in the body', async () => {
    const res = await anthropic.messages.countTokens({ model: 'anthropic/claude-sonnet-4.5', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.input_tokens, 42);
    const call = lastCall();
    assert.equal(call.path, '/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict');
    assert.equal(call.body.model, 'claude-sonnet-4-5');
    assert.equal('max_tokens' in call.body, false);
  });
});
